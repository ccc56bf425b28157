// npz.cpp: .npz reading and writing with libzip. See npz.h.
#include "datasets/npz.h"

#include <zip.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <unistd.h>

#include "common/error.h"
#include "common/paths.h"
#include "common/atomic_file.h"

namespace balerbench {
namespace {

// Deflate cannot expand data by more than ~1032:1; anything claiming more is
// corrupt or a zip bomb.
constexpr uint64_t kMaxDeflateRatio = 1100;

struct ArchiveCloser {
  void operator()(zip_t* z) const { if (z) zip_discard(z); }
};
struct FileCloser {
  void operator()(zip_file_t* f) const { if (f) zip_fclose(f); }
};

std::string zip_open_error(int code) {
  zip_error_t err;
  zip_error_init_with_code(&err, code);
  std::string msg = zip_error_strerror(&err);
  zip_error_fini(&err);
  return msg;
}

NpyArray read_member(zip_t* z, zip_uint64_t index, const zip_stat_t& st, const std::string& where) {
  if ((st.valid & ZIP_STAT_SIZE) == 0) throw InputError(where + ": member has no size", "the archive is corrupt");
  if (st.comp_method != ZIP_CM_STORE && (st.valid & ZIP_STAT_COMP_SIZE) &&
      st.size > st.comp_size * kMaxDeflateRatio + 4096)
    throw InputError(where + ": member claims an implausible uncompressed size", "the archive is corrupt or malicious");
  std::unique_ptr<zip_file_t, FileCloser> f(zip_fopen_index(z, index, 0));
  if (!f) throw InputError(where + ": cannot open member: " + zip_strerror(z), "the archive is corrupt");
  // Header first: validate the announced shape against the member's size before allocating.
  std::vector<uint8_t> head(static_cast<std::size_t>(std::min<zip_uint64_t>(st.size, 4096)));
  std::size_t got = 0;
  auto read_or_throw = [&](uint8_t* dst, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
      const zip_int64_t r = zip_fread(f.get(), dst + done, n - done);
      if (r < 0) throw InputError(where + ": cannot read member: " + zip_file_strerror(f.get()),
                                  "the archive is truncated or corrupt");
      if (r == 0) break;
      done += static_cast<std::size_t>(r);
    }
    return done;
  };
  got = read_or_throw(head.data(), head.size());
  NpyHeader h = parse_npy_header(head.data(), got, where);
  if (h.header_bytes > got) {  // long header: read the rest of it
    if (h.header_bytes > st.size) throw InputError(where + ": truncated .npy header");
    head.resize(h.header_bytes);
    got += read_or_throw(head.data() + got, h.header_bytes - got);
    h = parse_npy_header(head.data(), got, where);
  }
  const uint64_t available = st.size - h.header_bytes;
  if (h.payload_bytes > available)
    throw InputError(where + ": header announces " + std::to_string(h.payload_bytes) + " bytes but the member holds " +
                         std::to_string(available),
                     "the archive is truncated or its header is corrupt or malicious");
  std::vector<uint8_t> all(h.header_bytes + h.payload_bytes);
  std::copy(head.begin(), head.begin() + std::min<std::size_t>(got, all.size()), all.begin());
  std::size_t have = std::min<std::size_t>(got, all.size());
  have += read_or_throw(all.data() + have, all.size() - have);
  if (have != all.size())
    throw InputError(where + ": member ends after " + std::to_string(have) + " of " + std::to_string(all.size()) +
                         " bytes",
                     "the archive is truncated");
  return parse_npy(all.data(), all.size(), where);
}

}  // namespace

namespace {

// The members of an open archive; `where` names it in errors.
NpzMembers members_of(zip_t* z, const std::string& where) {
  NpzMembers members;
  const zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st) != 0)
      throw InputError(where + ": cannot read the archive's entry " + std::to_string(i), "the archive is corrupt");
    std::string name = st.name ? st.name : "";
    if (name.empty() || name.back() == '/') continue;
    const std::string member_where = where + ":" + name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    members.emplace(name, read_member(z, static_cast<zip_uint64_t>(i), st, member_where));
  }
  return members;
}

// A zip starts with a member's local header ("PK\3\4") or, empty, with its end record ("PK\5\6").
bool starts_like_a_zip(const uint8_t* head, std::size_t n) {
  return n >= 4 && head[0] == 'P' && head[1] == 'K' && ((head[2] == 3 && head[3] == 4) || (head[2] == 5 && head[3] == 6));
}

// `zip_like`: the file starts as a zip does, so libzip's "not a zip archive" means its end record
// (the directory of members, at the end of the file) is missing: the file was cut short or damaged.
[[noreturn]] void throw_open_error(const std::string& where, int code, bool zip_like) {
  if (code == ZIP_ER_NOZIP && zip_like)
    throw InputError(where + ": the .npz archive is truncated or damaged: it starts as a zip, but its end record "
                             "(the list of members, at the end of the file) is missing",
                     "write or copy the file again; a copy cut short or a full disk leaves this");
  if (code == ZIP_ER_NOZIP)
    throw InputError(where + ": not a zip archive, so not an .npz file", "write it with numpy.savez");
  if (code == ZIP_ER_INCONS || code == ZIP_ER_EOF || code == ZIP_ER_READ)
    throw InputError(where + ": the .npz archive is truncated or damaged (" + zip_open_error(code) +
                         "): a member's data runs past the end of the file or disagrees with the list of members",
                     "write or copy the file again");
  throw InputError(where + ": cannot open .npz: " + zip_open_error(code));
}

}  // namespace

NpzMembers read_npz(const std::string& path) {
  namespace fs = std::filesystem;
  if (!fs::exists(path)) throw InputError(path + ": no such file", "check input_path");
  if (fs::is_directory(path)) throw InputError(path + ": is a folder, not an .npz file");
  int code = 0;
  std::unique_ptr<zip_t, ArchiveCloser> z(zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
  if (!z) {
    uint8_t head[4] = {};
    std::FILE* f = std::fopen(path.c_str(), "rb");
    const std::size_t n = f ? std::fread(head, 1, sizeof head, f) : 0;
    if (f) std::fclose(f);
    throw_open_error(path, code, starts_like_a_zip(head, n));
  }
  return members_of(z.get(), path);
}

NpzMembers parse_npz(const uint8_t* bytes, std::size_t size, const std::string& where) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* src = zip_source_buffer_create(bytes, size, 0, &error);
  if (!src) {
    zip_error_fini(&error);
    throw InputError(where + ": cannot read the archive from memory");
  }
  std::unique_ptr<zip_t, ArchiveCloser> z(zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error));
  if (!z) {
    const int code = zip_error_code_zip(&error);
    zip_source_free(src);  // not taken over by a failed open
    zip_error_fini(&error);
    throw_open_error(where, code, starts_like_a_zip(bytes, size));
  }
  zip_error_fini(&error);
  return members_of(z.get(), where);
}

void write_npz(const std::string& path, const std::vector<std::pair<std::string, NpyArray>>& members, bool deflate) {
  const AtomicWrite w = begin_atomic_write(path);
  const std::string& tmp = w.temporary;
  int code = 0;
  zip_t* z = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  if (!z) throw InputError(path + ": cannot create archive: " + zip_open_error(code), "check that the folder is writable");
  // Buffers must outlive zip_close(), which is when libzip reads them.
  std::vector<std::vector<uint8_t>> images;
  images.reserve(members.size());
  auto fail = [&](const std::string& what) {
    zip_discard(z);
    std::remove(tmp.c_str());
    throw InputError(path + ": " + what);
  };
  for (const auto& [key, array] : members) {
    images.push_back(serialize_npy(array));
    zip_source_t* src = zip_source_buffer(z, images.back().data(), images.back().size(), 0);
    if (!src) fail("cannot add member " + key + ": " + zip_strerror(z));
    const zip_int64_t idx = zip_file_add(z, (key + ".npy").c_str(), src, ZIP_FL_OVERWRITE | ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
      zip_source_free(src);
      fail("cannot add member " + key + ": " + zip_strerror(z));
    }
    if (zip_set_file_compression(z, static_cast<zip_uint64_t>(idx), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) != 0)
      fail("cannot set compression for " + key + ": " + zip_strerror(z));
  }
  if (zip_close(z) != 0) {
    // libzip writes the archive here: a full disk or a file-size limit is a WriteError.
    zip_error_t* ze = zip_get_error(z);
    const int error = zip_error_system_type(ze) == ZIP_ET_SYS ? zip_error_code_system(ze) : 0;
    const std::string reason = zip_strerror(z);
    zip_discard(z);
    std::remove(tmp.c_str());
    if (error) throw_write_failure(path, "cannot write the archive", error);
    throw InputError(path + ": cannot write the archive: " + reason);
  }
  commit_atomic_write(w);
}

}  // namespace balerbench
