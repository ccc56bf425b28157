// carry_probe.cpp: each library the harness links besides LibTorch, used once for real: an HTTP
// request to a server on the loopback (cpp-httplib), a table in SQLite, a member written into and
// read back from a zip archive (libzip), a Zstandard and a ZFP round trip, a JSON document
// (nlohmann). It exits 0 when every one gave back what it was given, else 1 naming the one that did
// not. scripts/check_carry_build.sh builds it against the lent GPU machines' carried libraries
// (.carry/) and runs it there without LD_LIBRARY_PATH; ctest runs it against Debian's.
#include <httplib.h>
#include <sqlite3.h>
#include <zfp.h>
#include <zip.h>
#include <zstd.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

bool http_round_trip() {
  httplib::Server server;
  server.Get("/ping", [](const httplib::Request&, httplib::Response& res) { res.set_content("pong", "text/plain"); });
  const int port = server.bind_to_any_port("127.0.0.1");
  if (port <= 0) return false;
  std::thread serving([&] { server.listen_after_bind(); });
  // A real wait (up to 10 s): httplib's listening thread starts on the machine's time.
  for (int i = 0; i < 2000 && !server.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  httplib::Client client("127.0.0.1", port);
  const auto res = client.Get("/ping");
  server.stop();
  serving.join();
  return res && res->status == 200 && res->body == "pong";
}

bool sqlite_round_trip() {
  sqlite3* db = nullptr;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) return false;
  int value = 0;
  const int rc = sqlite3_exec(db, "CREATE TABLE t(v INTEGER); INSERT INTO t VALUES (42); SELECT v FROM t;",
                              [](void* out, int, char** cols, char**) {
                                *static_cast<int*>(out) = std::atoi(cols[0]);
                                return 0;
                              },
                              &value, nullptr);
  sqlite3_close(db);
  return rc == SQLITE_OK && value == 42;
}

bool zip_round_trip() {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("carry_probe_" + std::to_string(::getpid()) + ".zip")).string();
  static const char kText[] = "baler";
  int err = 0;
  zip_t* out = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (!out) return false;
  zip_source_t* src = zip_source_buffer(out, kText, sizeof kText, 0);
  const bool added = src && zip_file_add(out, "member.txt", src, ZIP_FL_OVERWRITE) >= 0;
  if (zip_close(out) != 0 || !added) return false;
  zip_t* in = zip_open(path.c_str(), ZIP_RDONLY, &err);
  char back[sizeof kText] = {};
  zip_file_t* f = in ? zip_fopen(in, "member.txt", 0) : nullptr;
  const bool read = f && zip_fread(f, back, sizeof back) == static_cast<zip_int64_t>(sizeof kText);
  if (f) zip_fclose(f);
  if (in) zip_close(in);
  std::filesystem::remove(path);
  return read && std::string(back) == kText;
}

bool zstd_round_trip() {
  const std::string text(4096, 'b');
  std::vector<char> packed(ZSTD_compressBound(text.size()));
  const std::size_t n = ZSTD_compress(packed.data(), packed.size(), text.data(), text.size(), 3);
  if (ZSTD_isError(n)) return false;
  std::string back(text.size(), '\0');
  const std::size_t m = ZSTD_decompress(back.data(), back.size(), packed.data(), n);
  return !ZSTD_isError(m) && back == text;
}

bool zfp_round_trip() {
  std::vector<double> values(64), back(64);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.5 * static_cast<double>(i);
  zfp_field* field = zfp_field_1d(values.data(), zfp_type_double, values.size());
  zfp_stream* zs = zfp_stream_open(nullptr);
  zfp_stream_set_reversible(zs);
  std::vector<unsigned char> buffer(zfp_stream_maximum_size(zs, field));
  bitstream* bits = stream_open(buffer.data(), buffer.size());
  zfp_stream_set_bit_stream(zs, bits);
  const std::size_t packed = zfp_compress(zs, field);
  zfp_stream_rewind(zs);
  zfp_field_set_pointer(field, back.data());
  const bool ok = packed > 0 && zfp_decompress(zs, field) > 0 && back == values;
  zfp_field_free(field);
  zfp_stream_close(zs);
  stream_close(bits);
  return ok;
}

bool json_round_trip() {
  const nlohmann::json j = nlohmann::json::parse(R"({"ratio": 1.6})");
  return j.value("ratio", 0.0) == 1.6 && j.dump() == R"({"ratio":1.6})";
}

}  // namespace

int main() {
  const struct {
    const char* name;
    bool (*check)();
  } checks[] = {{"cpp-httplib", http_round_trip}, {"SQLite", sqlite_round_trip}, {"libzip", zip_round_trip},
                {"Zstandard", zstd_round_trip},   {"ZFP", zfp_round_trip},       {"nlohmann_json", json_round_trip}};
  int failed = 0;
  for (const auto& c : checks) {
    const bool ok = c.check();
    std::printf("carry_probe: %s: %s\n", c.name, ok ? "OK" : "FAILED");
    failed += ok ? 0 : 1;
  }
  return failed == 0 ? 0 : 1;
}
