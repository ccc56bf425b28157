// codec_registry.cpp: see codec_registry.h. To add a codec: its file defines a CodecEntry (see
// zstd_codec.cpp's zstd_codec_entry, with its settings), declared and listed below; nothing else
// names it.
#include "harness/codecs/codec_registry.h"

#include <algorithm>
#include <cstdio>

#include "common/text.h"
#include "common/error.h"
#include "harness/base/name_table.h"

namespace balerbench {

const CodecEntry& zfp_accuracy_codec_entry();  // zfp_accuracy_codec.cpp
const CodecEntry& zfp_columns_codec_entry();   // zfp_columns_codec.cpp
const CodecEntry& zfp_rate_codec_entry();      // zfp_rate_codec.cpp
const CodecEntry& zstd_codec_entry();          // zstd_codec.cpp
const CodecEntry& float16_codec_entry();       // downcast_codecs.cpp
const CodecEntry& bfloat16_codec_entry();      // downcast_codecs.cpp

namespace {

const std::vector<const CodecEntry*>& built_in() {
  static const std::vector<const CodecEntry*> entries = {
      &zfp_accuracy_codec_entry(),  // ratio at Baler's error
      &zfp_columns_codec_entry(),   // the same, column by column
      &zfp_rate_codec_entry(),      // error at Baler's ratio
      &zstd_codec_entry(),          // the exact reference
      &float16_codec_entry(),
      &bfloat16_codec_entry(),
  };
  return entries;
}

std::vector<const CodecEntry*>& registered() {
  static std::vector<const CodecEntry*> entries;
  return entries;
}

const CodecEntry* find_codec(const std::string& name) {
  for (const CodecEntry* e : codec_registry())
    if (name == e->name) return e;
  return nullptr;
}

}  // namespace

std::vector<const CodecEntry*> codec_registry() {
  std::vector<const CodecEntry*> all = built_in();
  all.insert(all.end(), registered().begin(), registered().end());
  return all;
}

std::vector<std::string> codec_names() {
  std::vector<std::string> names;
  for (const CodecEntry* e : codec_registry()) names.emplace_back(e->name);
  return names;
}

const CodecEntry& codec_entry(const std::string& name) {
  if (const CodecEntry* e = find_codec(name)) return *e;
  throw InputError("unknown codec '" + name + "'", "one of: " + joined(codec_names()));
}

Knobs default_codec_knobs() { return default_knobs_of(codec_registry()); }

void read_codec_knobs(StrictReader& r, Knobs& knobs) { read_knobs_of(codec_registry(), r, knobs); }

std::vector<ConfigKeyDoc> codec_knob_docs() { return knob_docs_of(codec_registry()); }

std::string codec_number(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

CodecRegistration::CodecRegistration(const CodecEntry& entry) : entry_(&entry) {
  if (find_codec(entry.name) || std::string(entry.name) == "baler")
    throw InputError(std::string("codec '") + entry.name + "' is registered already",
                     "give the codec a name of its own");
  registered().push_back(entry_);
}

CodecRegistration::~CodecRegistration() {
  std::vector<const CodecEntry*>& r = registered();
  r.erase(std::remove(r.begin(), r.end(), entry_), r.end());
}

}  // namespace balerbench
