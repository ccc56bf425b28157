// torch_save.cpp: see torch_save.h. Opcodes as Python's pickle module names them
// (Lib/pickletools.py); only those torch.save's protocol-2 state dicts use are read.
#include "models/torch_save.h"

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "common/error.h"

namespace balerbench {
namespace {

// Storage classes and their dtypes, as torch.save names them.
const std::vector<std::pair<std::string, at::ScalarType>>& storage_types() {
  static const std::vector<std::pair<std::string, at::ScalarType>> t = {
      {"DoubleStorage", at::kDouble}, {"FloatStorage", at::kFloat}, {"HalfStorage", at::kHalf},
      {"BFloat16Storage", at::kBFloat16}, {"LongStorage", at::kLong}, {"IntStorage", at::kInt},
      {"ShortStorage", at::kShort}, {"CharStorage", at::kChar}, {"ByteStorage", at::kByte},
      {"BoolStorage", at::kBool}};
  return t;
}

// ---- writing -------------------------------------------------------------------------------

class Pickler {
 public:
  void op(char c) { out_.push_back(c); }
  void global(const std::string& module, const std::string& name) {
    op('c');
    out_ += module + "\n" + name + "\n";
  }
  void str(const std::string& s) {  // BINUNICODE: 4-byte little-endian length, UTF-8
    op('X');
    put_u32(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');
      out_.push_back(static_cast<char>(v));
    } else if (v >= 0 && v < 65536) {
      op('M');
      out_.push_back(static_cast<char>(v & 0xff));
      out_.push_back(static_cast<char>(v >> 8));
    } else {
      TORCH_CHECK(v >= INT32_MIN && v <= INT32_MAX, "torch_save: integer out of 32-bit range: ", v);
      op('J');
      put_u32(static_cast<uint32_t>(static_cast<int32_t>(v)));
    }
  }
  void int_tuple(at::IntArrayRef values) {
    op('(');
    for (int64_t v : values) integer(v);
    op('t');
  }
  void empty_ordered_dict() {
    global("collections", "OrderedDict");
    op(')');
    op('R');
  }
  const std::string& bytes() const { return out_; }

 private:
  void put_u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

std::string storage_name(at::ScalarType t) {
  for (const auto& [name, type] : storage_types())
    if (type == t) return name;
  TORCH_CHECK(false, "torch_save: no storage type for ", t);
}

// One entry: name, then _rebuild_tensor_v2((storage pid), offset, size, stride, False, OrderedDict()).
void pickle_tensor(Pickler& p, const std::string& name, const at::Tensor& t, std::size_t key) {
  p.str(name);
  p.global("torch._utils", "_rebuild_tensor_v2");
  p.op('(');
  p.op('(');
  p.str("storage");
  p.global("torch", storage_name(t.scalar_type()));
  p.str(std::to_string(key));
  p.str("cpu");
  p.integer(t.numel());
  p.op('t');
  p.op('Q');  // BINPERSID
  p.integer(0);
  p.int_tuple(t.sizes());
  p.int_tuple(t.strides());
  p.op('\x89');  // NEWFALSE: requires_grad
  p.empty_ordered_dict();  // backward hooks
  p.op('t');
  p.op('R');
}

}  // namespace

std::vector<char> torch_save_bytes(const StateDictEntries& entries) {
  std::vector<at::Tensor> tensors;
  Pickler p;
  p.op('\x80');  // PROTO 2
  p.op('\x02');
  p.empty_ordered_dict();
  p.op('(');
  for (const auto& [name, tensor] : entries) {
    tensors.push_back(tensor.detach().cpu().contiguous());
    pickle_tensor(p, name, tensors.back(), tensors.size() - 1);
  }
  p.op('u');  // SETITEMS
  p.op('.');  // STOP
  std::vector<char> out;
  caffe2::serialize::PyTorchStreamWriter writer([&out](const void* data, size_t n) {
    out.insert(out.end(), static_cast<const char*>(data), static_cast<const char*>(data) + n);
    return n;
  });
  writer.writeRecord("data.pkl", p.bytes().data(), p.bytes().size());
  for (std::size_t i = 0; i < tensors.size(); ++i)
    writer.writeRecord("data/" + std::to_string(i), tensors[i].data_ptr(), tensors[i].nbytes());
  writer.writeEndOfFile();
  return out;
}

// ---- reading -------------------------------------------------------------------------------

namespace {

struct Value;
using ValuePtr = std::shared_ptr<Value>;

struct Value {
  enum class Kind { kNone, kBool, kInt, kFloat, kString, kTuple, kList, kDict, kGlobal, kStorage, kTensor, kMark };
  Kind kind = Kind::kNone;
  int64_t i = 0;
  double f = 0;
  std::string s;                // kString; kGlobal: "module.name"
  std::vector<ValuePtr> items;  // kTuple, kList; kDict: key, value, key, value, ...
  at::Tensor tensor;            // kStorage (1-D, its dtype), kTensor
};

ValuePtr make(Value::Kind k) {
  auto v = std::make_shared<Value>();
  v->kind = k;
  return v;
}

class Unpickler {
 public:
  Unpickler(const std::string& bytes, caffe2::serialize::PyTorchStreamReader& zip, std::string where)
      : b_(bytes), zip_(zip), where_(std::move(where)) {}
  ValuePtr run();

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(where_ + ": not a state dict torch.save wrote: " + what,
                     "expected torch.save(model.state_dict(), path), as Baler and balerbench write it");
  }
  uint8_t byte() {
    if (pos_ >= b_.size()) fail("data.pkl ends early");
    return static_cast<uint8_t>(b_[pos_++]);
  }
  uint64_t le(int n) {
    uint64_t v = 0;
    for (int k = 0; k < n; ++k) v |= static_cast<uint64_t>(byte()) << (8 * k);
    return v;
  }
  std::string take(std::size_t n) {
    if (n > b_.size() - pos_) fail("data.pkl ends early");
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string line() {
    const auto end = b_.find('\n', pos_);
    if (end == std::string::npos) fail("data.pkl ends early");
    std::string s = b_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }
  // The value on top of the stack (of kind `k` when given), left there.
  ValuePtr top(std::optional<Value::Kind> k = std::nullopt) const {
    if (stack_.empty()) fail("the pickle's stack underflows");
    if (k && stack_.back()->kind != *k) fail("an opcode applied to a value of the wrong kind");
    return stack_.back();
  }
  ValuePtr pop() {
    if (stack_.empty()) fail("the pickle's stack underflows");
    ValuePtr v = stack_.back();
    stack_.pop_back();
    return v;
  }
  std::vector<ValuePtr> pop_to_mark() {
    std::vector<ValuePtr> items;
    while (true) {
      ValuePtr v = pop();
      if (v->kind == Value::Kind::kMark) break;
      items.push_back(v);
    }
    return {items.rbegin(), items.rend()};
  }
  void push_int(int64_t v) {
    auto x = make(Value::Kind::kInt);
    x->i = v;
    stack_.push_back(x);
  }
  void push_tuple(std::vector<ValuePtr> items) {
    auto t = make(Value::Kind::kTuple);
    t->items = std::move(items);
    stack_.push_back(t);
  }
  bool step(uint8_t op);
  void global();
  void reduce();
  void persistent_load();
  void set_items(std::vector<ValuePtr> items);
  ValuePtr memo_get(uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail("a memo key is missing");
    return it->second;
  }

  const std::string& b_;
  caffe2::serialize::PyTorchStreamReader& zip_;
  std::string where_;
  std::size_t pos_ = 0;
  std::vector<ValuePtr> stack_;
  std::map<uint64_t, ValuePtr> memo_;
  std::map<std::string, ValuePtr> storages_;
};

ValuePtr Unpickler::run() {
  while (step(byte())) {
  }
  if (stack_.size() != 1) fail("the pickle leaves " + std::to_string(stack_.size()) + " values");
  return stack_.back();
}

// One opcode; false at STOP.
bool Unpickler::step(uint8_t op) {
  using K = Value::Kind;
  switch (op) {
    case 0x80: byte(); return true;                                     // PROTO
    case 0x95: le(8); return true;                                      // FRAME (protocol 4)
    case '.': return false;                                             // STOP
    case 'c': global(); return true;                                    // GLOBAL
    case 'q': { const uint64_t k = byte(); memo_[k] = top(); return true; }     // BINPUT
    case 'r': { const uint64_t k = le(4); memo_[k] = top(); return true; }      // LONG_BINPUT
    case 0x94: { const uint64_t k = memo_.size(); memo_[k] = top(); return true; }  // MEMOIZE
    case 'h': stack_.push_back(memo_get(byte())); return true;          // BINGET
    case 'j': stack_.push_back(memo_get(le(4))); return true;           // LONG_BINGET
    case '(': stack_.push_back(make(K::kMark)); return true;            // MARK
    case 't': push_tuple(pop_to_mark()); return true;                   // TUPLE
    case ')': push_tuple({}); return true;                               // EMPTY_TUPLE
    case 0x85: { auto a = pop(); push_tuple({a}); return true; }        // TUPLE1
    case 0x86: { auto b = pop(), a = pop(); push_tuple({a, b}); return true; }
    case 0x87: { auto c = pop(), b = pop(), a = pop(); push_tuple({a, b, c}); return true; }
    case '}': stack_.push_back(make(K::kDict)); return true;            // EMPTY_DICT
    case ']': stack_.push_back(make(K::kList)); return true;            // EMPTY_LIST
    case 's': { auto v = pop(), k = pop(); set_items({k, v}); return true; }  // SETITEM
    case 'u': set_items(pop_to_mark()); return true;                    // SETITEMS
    case 'a': { auto v = pop(); top(K::kList)->items.push_back(v); return true; }   // APPEND
    case 'e': { auto v = pop_to_mark(); auto& l = top(K::kList)->items; l.insert(l.end(), v.begin(), v.end()); return true; }
    case 'X': { auto s = make(K::kString); s->s = take(le(4)); stack_.push_back(s); return true; }  // BINUNICODE
    case 0x8c: { auto s = make(K::kString); s->s = take(byte()); stack_.push_back(s); return true; }  // SHORT_BINUNICODE
    case 'K': push_int(byte()); return true;                                                  // BININT1
    case 'M': push_int(static_cast<int64_t>(le(2))); return true;                             // BININT2
    case 'J': push_int(static_cast<int32_t>(static_cast<uint32_t>(le(4)))); return true;      // BININT
    case 0x8a: {                                                                              // LONG1
      const int n = byte();
      if (n > 8) fail("an integer wider than 64 bits");
      uint64_t v = n ? le(n) : 0;
      if (n && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign-extend
      push_int(static_cast<int64_t>(v));
      return true;
    }
    case 'G': {  // BINFLOAT: 8 bytes big-endian
      uint64_t bits = 0;
      for (int k = 0; k < 8; ++k) bits = (bits << 8) | byte();
      auto x = make(K::kFloat);
      std::memcpy(&x->f, &bits, 8);
      stack_.push_back(x);
      return true;
    }
    case 'N': stack_.push_back(make(K::kNone)); return true;
    case 0x88: case 0x89: { auto x = make(K::kBool); x->i = op == 0x88; stack_.push_back(x); return true; }
    case 'Q': persistent_load(); return true;  // BINPERSID
    case 'R': reduce(); return true;           // REDUCE
    case 'b': pop(); top(K::kDict); return true;  // BUILD: an OrderedDict's _metadata, not needed here
    default: {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02x", op);
      fail(std::string("pickle opcode ") + buf + " at byte " + std::to_string(pos_ - 1) + " is not one torch.save writes");
    }
  }
}

void Unpickler::global() {
  const std::string module = line(), name = line();
  const std::string full = module + "." + name;
  bool allowed = full == "collections.OrderedDict" || full == "torch._utils._rebuild_tensor_v2" ||
                 full == "torch._utils._rebuild_parameter" || full == "torch.jit._pickle.restore_type_tag";
  for (const auto& [storage, type] : storage_types()) allowed = allowed || full == "torch." + storage;
  if (!allowed) fail("it names the Python global " + full + ", which a state dict of tensors never needs");
  auto g = make(Value::Kind::kGlobal);
  g->s = full;
  stack_.push_back(g);
}

void Unpickler::persistent_load() {
  const ValuePtr pid = pop();
  if (pid->kind != Value::Kind::kTuple || pid->items.size() != 5 || pid->items[0]->s != "storage" ||
      pid->items[1]->kind != Value::Kind::kGlobal || pid->items[2]->kind != Value::Kind::kString ||
      pid->items[4]->kind != Value::Kind::kInt)
    fail("a persistent id that is not a storage");
  const std::string key = pid->items[2]->s;
  if (auto it = storages_.find(key); it != storages_.end()) {
    stack_.push_back(it->second);
    return;
  }
  at::ScalarType type = at::kFloat;
  for (const auto& [storage, t] : storage_types())
    if (pid->items[1]->s == "torch." + storage) type = t;
  const int64_t numel = pid->items[4]->i;
  const std::string record = "data/" + key;
  if (!zip_.hasRecord(record)) fail("no record " + record + " for a storage");
  auto [data, bytes] = zip_.getRecord(record);
  const auto element = static_cast<int64_t>(c10::elementSize(type));
  if (numel < 0 || static_cast<int64_t>(bytes) % element != 0 || numel != static_cast<int64_t>(bytes) / element)
    fail("storage " + key + " holds " + std::to_string(bytes) + " bytes, not " + std::to_string(numel) + " x " +
         std::to_string(element));
  auto s = make(Value::Kind::kStorage);
  s->tensor = at::empty({numel}, at::TensorOptions().dtype(type));
  if (bytes) std::memcpy(s->tensor.data_ptr(), data.get(), bytes);
  storages_[key] = s;
  stack_.push_back(s);
}

std::vector<int64_t> int_list(const ValuePtr& v, const char* what, const std::string& where) {
  std::vector<int64_t> out;
  if (v->kind != Value::Kind::kTuple) throw InputError(where + ": a tensor's " + what + " is not a tuple");
  for (const auto& x : v->items) {
    if (x->kind != Value::Kind::kInt) throw InputError(where + ": a tensor's " + what + " holds a non-integer");
    out.push_back(x->i);
  }
  return out;
}

void Unpickler::reduce() {
  const ValuePtr args = pop(), fn = pop();
  if (fn->kind != Value::Kind::kGlobal || args->kind != Value::Kind::kTuple) fail("REDUCE of something not callable");
  const auto& a = args->items;
  if (fn->s == "collections.OrderedDict") {
    if (!a.empty()) fail("OrderedDict built from arguments");
    stack_.push_back(make(Value::Kind::kDict));
  } else if (fn->s == "torch._utils._rebuild_tensor_v2") {
    if (a.size() < 4 || a[0]->kind != Value::Kind::kStorage || a[1]->kind != Value::Kind::kInt)
      fail("_rebuild_tensor_v2 with other arguments than (storage, offset, size, stride, ...)");
    const auto size = int_list(a[2], "size", where_), stride = int_list(a[3], "stride", where_);
    if (size.size() != stride.size()) fail("a tensor whose size and stride differ in length");
    // The view no larger than its storage and every element it reaches inside it (each check made
    // before the product it guards, so nothing overflows).
    const int64_t n = a[0]->tensor.numel(), offset = a[1]->i;
    if (offset < 0 || offset > n) fail("a tensor reaching past its storage");
    int64_t last = offset, elements = 1;
    bool empty = false;
    for (std::size_t d = 0; d < size.size(); ++d) {
      if (size[d] < 0 || stride[d] < 0) fail("a negative size or stride");
      if (size[d] == 0) empty = true;
      if (empty) continue;
      if (elements > n / size[d]) fail("a tensor larger than its storage");
      elements *= size[d];
      if (size[d] > 1 && stride[d] > (n - 1 - last) / (size[d] - 1)) fail("a tensor reaching past its storage");
      last += (size[d] - 1) * stride[d];
    }
    if (!empty && last >= n) fail("a tensor reaching past its storage");
    auto t = make(Value::Kind::kTensor);
    t->tensor = a[0]->tensor.as_strided(size, stride, a[1]->i).clone();
    stack_.push_back(t);
  } else if (fn->s == "torch._utils._rebuild_parameter" || fn->s == "torch.jit._pickle.restore_type_tag") {
    if (a.empty()) fail(fn->s + " without arguments");
    stack_.push_back(a[0]);
  } else {
    fail("REDUCE of " + fn->s);
  }
}

void Unpickler::set_items(std::vector<ValuePtr> items) {
  if (items.size() % 2) fail("SETITEMS with an odd number of values");
  auto& d = top(Value::Kind::kDict)->items;
  for (auto& v : items) d.push_back(std::move(v));
}

}  // namespace

StateDictEntries read_torch_state_dict(const std::string& path) {
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> zip;
  std::string pickle;
  try {
    zip = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
    if (!zip->hasRecord("data.pkl")) throw InputError(path + ": no data.pkl in the archive");
    auto [data, size] = zip->getRecord("data.pkl");
    pickle.assign(static_cast<const char*>(data.get()), size);
    if (zip->hasRecord("byteorder")) {
      auto [order, n] = zip->getRecord("byteorder");
      if (std::string(static_cast<const char*>(order.get()), n) != "little")
        throw InputError(path + ": a big-endian torch.save file", "save it again on a little-endian machine");
    }
  } catch (const c10::Error& e) {
    throw InputError(path + ": not a readable model file (" + std::string(e.what_without_backtrace()) + ")",
                     "expected torch.save(model.state_dict(), path)");
  }
  const ValuePtr root = Unpickler(pickle, *zip, path).run();
  if (root->kind != Value::Kind::kDict) throw InputError(path + ": model file does not hold a state dict");
  StateDictEntries out;
  for (std::size_t k = 0; k + 1 < root->items.size(); k += 2) {
    const ValuePtr& key = root->items[k];
    const ValuePtr& value = root->items[k + 1];
    if (key->kind != Value::Kind::kString) throw InputError(path + ": the state dict has a key that is not a string");
    if (value->kind != Value::Kind::kTensor)
      throw InputError(path + ": the state dict's entry '" + key->s + "' is not a tensor");
    out.emplace_back(key->s, value->tensor);
  }
  return out;
}

}  // namespace balerbench
