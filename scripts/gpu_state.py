#!/usr/bin/env python3
"""gpu_state.py: balerbench's reading of a real GPU against nvidia-smi's (scripts/gpu_check.sh state).

usage: gpu_state.py DIR

DIR holds nvidia_smi_q.txt (`nvidia-smi -q`), system.json (`balerbench system --json`), doctor.json
(`balerbench doctor --json`) and gpu_state.sqlite (a short sweep). Prints a Markdown table, one row
per field: what balerbench read, what nvidia-smi printed, and whether they agree (clocks and
temperature move between the two reads, so those are shown, not judged). Then the doctor's GPU
hazards and each trial's provenance of the GPU (state, software, fingerprint). Exits 1 when a field
that cannot move between two reads (name, UUID, persistence, compute mode, MIG, power limit, driver,
CUDA) disagrees, or a file is missing.
"""
import json
import re
import sqlite3
import sys


def smi_fields(text):
    """nvidia-smi -q as {section path: value}, e.g. 'Clocks/SM' -> '1980 MHz'."""
    out, stack = {}, []
    for line in text.splitlines():
        if not line.strip() or line.startswith("="):
            continue
        indent = len(line) - len(line.lstrip(" "))
        depth = indent // 4
        m = re.match(r"(.*?)\s+:\s*(.*)$", line.strip())  # "Key   : value"; a bare "GPU 0000:07:00.0" opens a section
        key, value = (m.group(1), m.group(2).strip()) if m else (line.strip(), "")
        stack = stack[:depth]
        if value:
            out["/".join(stack + [key])] = value
        else:
            stack.append(key)
    return out


def first(fields, *patterns):
    for p in patterns:
        for k, v in fields.items():
            if re.fullmatch(p, k):
                return v
    return None


def number(s):
    m = re.search(r"[-\d.]+", s or "")
    return float(m.group()) if m else None


def main(d):
    try:
        smi_text = open(f"{d}/nvidia_smi_q.txt").read()
        system = json.load(open(f"{d}/system.json"))
    except (OSError, ValueError) as e:
        print(f"gpu_state.py: {e}")
        return 1
    smi = smi_fields(smi_text)
    bad = 0
    print("| field | balerbench system --json | nvidia-smi -q | agree |")
    print("|---|---|---|---|")
    gpus = system.get("gpus") or []
    if not gpus:
        print("| gpus | none | | no |")
        bad += 1
    for g in gpus:
        s = g.get("state") or g
        rows = [
            ("name", g.get("name"), first(smi, r".*/Product Name"), lambda a, b: a == b),
            ("uuid", g.get("uuid") or s.get("uuid"), first(smi, r".*/GPU UUID"), lambda a, b: a == b),
            ("persistence_mode", s.get("persistence_mode"), first(smi, r".*/Persistence Mode"),
             lambda a, b: (a or "").lower() == (b or "").lower()),
            ("compute_mode", s.get("compute_mode"), first(smi, r".*/Compute Mode"),
             lambda a, b: (a or "").replace("_", "").lower() == (b or "").replace("_", "").lower()),
            ("mig_mode", s.get("mig_mode"), first(smi, r".*MIG Mode/Current"),
             lambda a, b: (a or "n/a").lower() in (b or "n/a").lower() or (b or "").lower() in ("n/a", "")),
            ("power_limit_w", s.get("power_limit_w"),
             first(smi, r".*/Current Power Limit", r".*/Enforced Power Limit", r".*/Power Limit"),
             lambda a, b: a is not None and number(b) is not None and abs(float(a) - number(b)) < 1),
            ("sm_clock_mhz", s.get("sm_clock_mhz"), first(smi, r".*/Clocks/SM"), None),
            ("mem_clock_mhz", s.get("mem_clock_mhz"), first(smi, r".*/Clocks/Memory"), None),
            ("temperature_c", s.get("temperature_c"), first(smi, r".*/Temperature/GPU Current Temp"), None),
            ("throttle_reasons", s.get("throttle_reasons"),
             ", ".join(k.split("/")[-1] for k, v in smi.items()
                       if re.match(r".*Clocks (Event|Throttle) Reasons/", k) and v == "Active") or "none", None),
            ("compute_processes", s.get("compute_processes"), first(smi, r".*/Processes") or "(table)", None),
        ]
        for field, ours, theirs, same in rows:
            verdict = "" if same is None else ("yes" if same(ours, theirs) else "NO")
            bad += verdict == "NO"
            print(f"| {field} | {json.dumps(ours)} | {theirs} | {verdict or 'moves'} |")
    sw = system.get("gpu_software") or {}
    for field, pat in (("driver", r".*Driver Version"), ("cuda", r".*CUDA Version")):
        theirs = first(smi, pat)
        ours = sw.get(field)
        ok = ours is not None and theirs is not None and str(ours).split(".")[:2] == theirs.split(".")[:2]
        bad += not ok
        print(f"| gpu_software.{field} | {json.dumps(ours)} | {theirs} | {'yes' if ok else 'NO'} |")
    for field in ("cudnn", "cublas"):
        print(f"| gpu_software.{field} | {json.dumps(sw.get(field))} | (not in nvidia-smi) | |")
    print(f"\nfingerprint: {json.dumps(system.get('fingerprint'))}")

    try:
        doctor = json.load(open(f"{d}/doctor.json"))
        print("\n## doctor --json, GPU hazards")
        hazards = doctor if isinstance(doctor, list) else doctor.get("hazards", [])
        gpu_h = [h for h in hazards if str(h.get("id", "")).startswith("gpu")]
        for h in gpu_h:
            print(f"- {h.get('id')}: {h.get('what')} ({h.get('evidence')})")
        if not gpu_h:
            print(f"- none of {len(hazards)} hazard(s) is a GPU's: {[h.get('id') for h in hazards]}")
    except (OSError, ValueError) as e:
        print(f"doctor.json: {e}")
        bad += 1

    try:
        db = sqlite3.connect(f"file:{d}/gpu_state.sqlite?mode=ro", uri=True)
        rows = db.execute("SELECT precision, status, provenance_json FROM trials ORDER BY id").fetchall()
    except sqlite3.Error as e:
        print(f"gpu_state.sqlite: {e}")
        return 1
    print("\n## trial provenance")
    if not rows:
        bad += 1
    for precision, status, prov in rows:
        p = json.loads(prov or "{}")
        sysp = p.get("system") or {}
        gp = sysp.get("gpus") or []
        print(f"- {precision} ({status}): {len(gp)} GPU(s); state {json.dumps([g.get('state') for g in gp])}; "
              f"gpu_software {json.dumps(sysp.get('gpu_software'))}; fingerprint {json.dumps(sysp.get('fingerprint'))}")
        if not gp or not all(g.get("state") for g in gp):
            bad += 1
    print(f"\n{bad} disagreement(s) or missing reading(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]) if len(sys.argv) == 2 else 2)
