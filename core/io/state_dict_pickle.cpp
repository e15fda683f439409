#include "io/state_dict_pickle.h"

#include <climits>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>

#include <ATen/ATen.h>

#include "util/error.h"

namespace translution {
namespace {

// A pickled value. Containers are shared: the memo and the stack refer to the
// same dict while SETITEMS fills it.
struct Value;
using Ref = std::shared_ptr<Value>;
struct Value {
  enum class Kind { None, Bool, Int, Float, String, Tuple, List, Dict, Global, Storage, Tensor, Mark } kind;
  int64_t integer = 0;
  double real = 0;
  std::string text;                      // String; Global "module.name"; Storage key
  std::vector<Ref> items;                // Tuple, List
  std::vector<std::pair<Ref, Ref>> dict;  // Dict, in insertion order
  at::ScalarType dtype = at::kFloat;     // Storage
  at::Tensor tensor;                     // Tensor
};

Ref make(Value::Kind kind) {
  auto v = std::make_shared<Value>();
  v->kind = kind;
  return v;
}

const char* kind_name(Value::Kind k) {
  static const char* names[] = {"None", "bool", "int", "float", "string", "tuple", "list",
                                "dict", "global", "storage", "tensor", "mark"};
  return names[int(k)];
}

// torch.save names a storage's element type by its legacy class.
bool storage_dtype(const std::string& global, at::ScalarType* dtype) {
  static const std::map<std::string, at::ScalarType> types = {
      {"torch.FloatStorage", at::kFloat}, {"torch.DoubleStorage", at::kDouble}, {"torch.HalfStorage", at::kHalf},
      {"torch.BFloat16Storage", at::kBFloat16}, {"torch.LongStorage", at::kLong}, {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort}, {"torch.CharStorage", at::kChar}, {"torch.ByteStorage", at::kByte},
      {"torch.BoolStorage", at::kBool}};
  const auto it = types.find(global);
  if (it == types.end()) return false;
  *dtype = it->second;
  return true;
}

bool allowed_global(const std::string& name) {
  at::ScalarType unused;
  return name == "collections.OrderedDict" || name == "torch._utils._rebuild_tensor_v2" ||
         name == "torch._utils._rebuild_parameter" || storage_dtype(name, &unused);
}

class PickleMachine {
 public:
  PickleMachine(const std::vector<char>& bytes, const StorageBytes& storage) : bytes_(bytes), storage_(storage) {}

  Ref run() {
    while (true) {
      const uint8_t op = byte();
      if (op == '.') break;  // STOP
      if (!structure(op) && !scalar(op) && !memo(op) && !call(op)) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        throw Error(std::string("the pickle uses opcode ") + hex + ", which no state dict needs");
      }
    }
    if (stack_.size() != 1) throw Error("the pickle does not end with one value");
    return stack_.back();
  }

 private:
  // Reading the byte stream.
  uint8_t byte() { return uint8_t(*take(1)); }
  const char* take(size_t n) {
    if (n > bytes_.size() - pos_) throw Error("the pickle ends early");
    const char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  uint64_t little(size_t n) {
    const char* p = take(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(uint8_t(p[i])) << (8 * i);
    return v;
  }
  std::string line() {
    std::string s;
    for (char c = *take(1); c != '\n'; c = *take(1)) s += c;
    return s;
  }

  // The stack.
  Ref pop() {
    if (stack_.empty()) throw Error("the pickle pops an empty stack");
    Ref v = stack_.back();
    stack_.pop_back();
    return v;
  }
  std::vector<Ref> pop_to_mark() {
    std::vector<Ref> items;
    while (true) {
      Ref v = pop();
      if (v->kind == Value::Kind::Mark) break;
      items.insert(items.begin(), v);
    }
    return items;
  }
  Ref& top() {
    if (stack_.empty()) throw Error("the pickle reads an empty stack");
    return stack_.back();
  }
  void push(Ref v) { stack_.push_back(std::move(v)); }

  Ref tuple(std::vector<Ref> items) {
    Ref t = make(Value::Kind::Tuple);
    t->items = std::move(items);
    return t;
  }

  bool structure(uint8_t op);
  bool scalar(uint8_t op);
  bool memo(uint8_t op);
  bool call(uint8_t op);
  void set_items(const Ref& dict, const std::vector<Ref>& flat);
  Ref global(const std::string& name);
  Ref storage(const Ref& id);
  Ref rebuild_tensor(const std::vector<Ref>& args);

  const std::vector<char>& bytes_;
  const StorageBytes& storage_;
  size_t pos_ = 0;
  std::vector<Ref> stack_;
  std::map<uint64_t, Ref> memo_;
  std::map<std::string, at::Tensor> storages_;  // by key: tensors may share one
};

// Containers and the mark.
bool PickleMachine::structure(uint8_t op) {
  switch (op) {
    case '(': push(make(Value::Kind::Mark)); return true;                     // MARK
    case ')': push(tuple({})); return true;                                    // EMPTY_TUPLE
    case 't': push(tuple(pop_to_mark())); return true;                         // TUPLE
    case 0x85: { Ref a = pop(); push(tuple({a})); return true; }               // TUPLE1
    case 0x86: { Ref b = pop(), a = pop(); push(tuple({a, b})); return true; } // TUPLE2
    case 0x87: { Ref c = pop(), b = pop(), a = pop(); push(tuple({a, b, c})); return true; }  // TUPLE3
    case ']': push(make(Value::Kind::List)); return true;                      // EMPTY_LIST
    case 'a': { Ref v = pop(); top()->items.push_back(v); return true; }       // APPEND
    case 'e': { std::vector<Ref> vs = pop_to_mark(); for (auto& v : vs) top()->items.push_back(v); return true; }  // APPENDS
    case '}': push(make(Value::Kind::Dict)); return true;                      // EMPTY_DICT
    case 's': { Ref v = pop(), k = pop(); set_items(top(), {k, v}); return true; }  // SETITEM
    case 'u': { std::vector<Ref> flat = pop_to_mark(); set_items(top(), flat); return true; }  // SETITEMS
    default: return false;
  }
}

void PickleMachine::set_items(const Ref& dict, const std::vector<Ref>& flat) {
  if (dict->kind != Value::Kind::Dict) throw Error(std::string("the pickle sets items on a ") + kind_name(dict->kind));
  for (size_t i = 0; i + 1 < flat.size(); i += 2) dict->dict.emplace_back(flat[i], flat[i + 1]);
}

// Numbers, strings, None, booleans; protocol and framing.
bool PickleMachine::scalar(uint8_t op) {
  auto integer = [&](int64_t v) { Ref r = make(Value::Kind::Int); r->integer = v; push(r); };
  auto text = [&](size_t n) { Ref r = make(Value::Kind::String); r->text.assign(take(n), n); push(r); };
  switch (op) {
    case 0x80: byte(); return true;                     // PROTO
    case 0x95: little(8); return true;                  // FRAME
    case 'N': push(make(Value::Kind::None)); return true;
    case 0x88: case 0x89: { Ref r = make(Value::Kind::Bool); r->integer = op == 0x88; push(r); return true; }
    case 'K': integer(int64_t(little(1))); return true;                  // BININT1
    case 'M': integer(int64_t(little(2))); return true;                  // BININT2
    case 'J': integer(int64_t(int32_t(uint32_t(little(4))))); return true;  // BININT
    case 0x8a: {                                                         // LONG1
      const size_t n = byte();
      if (n > 8) throw Error("the pickle holds an integer wider than 64 bits");
      uint64_t v = n ? little(n) : 0;
      if (n && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n);  // sign-extend
      integer(int64_t(v));
      return true;
    }
    case 'G': {                                                          // BINFLOAT, big-endian
      const char* p = take(8);
      uint64_t bits = 0;
      for (int i = 0; i < 8; ++i) bits = bits << 8 | uint8_t(p[i]);
      Ref r = make(Value::Kind::Float);
      std::memcpy(&r->real, &bits, 8);
      push(r);
      return true;
    }
    case 'X': text(size_t(little(4))); return true;     // BINUNICODE
    case 0x8c: text(size_t(little(1))); return true;    // SHORT_BINUNICODE
    case 0x8d: text(size_t(little(8))); return true;    // BINUNICODE8
    default: return false;
  }
}

bool PickleMachine::memo(uint8_t op) {
  auto get = [&](uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) throw Error("the pickle reads a memo entry it never wrote");
    push(it->second);
  };
  switch (op) {
    case 'q': memo_[little(1)] = top(); return true;            // BINPUT
    case 'r': memo_[little(4)] = top(); return true;            // LONG_BINPUT
    case 0x94: memo_[memo_.size()] = top(); return true;        // MEMOIZE
    case 'h': get(little(1)); return true;                      // BINGET
    case 'j': get(little(4)); return true;                      // LONG_BINGET
    default: return false;
  }
}

Ref PickleMachine::global(const std::string& name) {
  if (!allowed_global(name))
    throw Error("the pickle asks for Python's " + name + "; a state dict holds only tensors in plain containers");
  Ref g = make(Value::Kind::Global);
  g->text = name;
  return g;
}

// Globals, persistent storages, and the few functions a state dict calls.
bool PickleMachine::call(uint8_t op) {
  switch (op) {
    case 'c': {  // GLOBAL "module\nname\n"
      const std::string module = line();
      push(global(module + "." + line()));
      return true;
    }
    case 0x93: {  // STACK_GLOBAL
      Ref name = pop(), module = pop();
      if (name->kind != Value::Kind::String || module->kind != Value::Kind::String)
        throw Error("the pickle names a global by something other than strings");
      push(global(module->text + "." + name->text));
      return true;
    }
    case 'Q': push(storage(pop())); return true;  // BINPERSID
    case 'R': {                                   // REDUCE
      Ref args = pop(), fn = pop();
      if (fn->kind != Value::Kind::Global || args->kind != Value::Kind::Tuple)
        throw Error("the pickle calls something that is not an allowed function");
      if (fn->text == "collections.OrderedDict" && args->items.empty()) push(make(Value::Kind::Dict));
      else if (fn->text == "torch._utils._rebuild_tensor_v2") push(rebuild_tensor(args->items));
      else if (fn->text == "torch._utils._rebuild_parameter" && !args->items.empty() &&
               args->items[0]->kind == Value::Kind::Tensor) push(args->items[0]);
      else throw Error("the pickle calls " + fn->text + " in a way no state dict does");
      return true;
    }
    case 'b': {  // BUILD: an OrderedDict's attributes (its _metadata) are of no use here
      pop();
      if (top()->kind != Value::Kind::Dict) throw Error(std::string("the pickle sets the state of a ") + kind_name(top()->kind));
      return true;
    }
    default: return false;
  }
}

// ('storage', <type>, key, location, numel) -> the storage's elements.
Ref PickleMachine::storage(const Ref& id) {
  const auto& f = id->items;
  if (id->kind != Value::Kind::Tuple || f.size() != 5 || f[0]->text != "storage" || f[1]->kind != Value::Kind::Global ||
      f[2]->kind != Value::Kind::String || f[4]->kind != Value::Kind::Int)
    throw Error("the pickle refers to a persistent object that is not a tensor storage");
  Ref s = make(Value::Kind::Storage);
  if (!storage_dtype(f[1]->text, &s->dtype)) throw Error("unknown storage type " + f[1]->text);
  s->text = f[2]->text;
  if (!storages_.count(s->text)) {
    const std::vector<char> bytes = storage_(s->text);
    const int64_t numel = f[4]->integer;
    const size_t need = size_t(numel) * at::elementSize(s->dtype);
    if (numel < 0 || bytes.size() < need)
      throw Error("storage " + s->text + " holds " + std::to_string(bytes.size()) + " bytes, not the " +
                  std::to_string(need) + " its " + std::to_string(numel) + " elements need");
    at::Tensor t = at::empty({numel}, at::TensorOptions(s->dtype));
    if (need) std::memcpy(t.data_ptr(), bytes.data(), need);
    storages_[s->text] = t;
  }
  s->tensor = storages_.at(s->text);
  return s;
}

std::vector<int64_t> integers(const Ref& tuple, const char* what) {
  if (tuple->kind != Value::Kind::Tuple) throw Error(std::string("a tensor's ") + what + " is not a tuple");
  std::vector<int64_t> out;
  for (const Ref& v : tuple->items) {
    if (v->kind != Value::Kind::Int) throw Error(std::string("a tensor's ") + what + " holds a " + kind_name(v->kind));
    out.push_back(v->integer);
  }
  return out;
}

// _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]): a copy, checked to lie inside its storage.
Ref PickleMachine::rebuild_tensor(const std::vector<Ref>& args) {
  if (args.size() < 4 || args[0]->kind != Value::Kind::Storage || args[1]->kind != Value::Kind::Int)
    throw Error("the pickle rebuilds a tensor from arguments torch.save does not write");
  const at::Tensor& elements = args[0]->tensor;
  const int64_t offset = args[1]->integer;
  const std::vector<int64_t> size = integers(args[2], "size"), stride = integers(args[3], "stride");
  if (size.size() != stride.size()) throw Error("a tensor's size and stride differ in length");
  int64_t last = offset;
  bool empty = false;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] < 0 || stride[d] < 0) throw Error("a tensor has a negative size or stride");
    empty = empty || size[d] == 0;
    last += (size[d] - 1) * stride[d];
  }
  if (offset < 0 || (!empty && last >= elements.numel()))
    throw Error("a tensor reaches past the end of storage " + args[0]->text);
  int64_t numel = 1;  // a state dict's tensors never repeat elements: no more than their storage holds
  for (int64_t s : size) numel = s > 0 && numel > elements.numel() / s ? elements.numel() + 1 : numel * s;
  if (numel > elements.numel()) throw Error("a tensor has more elements than storage " + args[0]->text + " holds");
  Ref t = make(Value::Kind::Tensor);
  t->tensor = empty ? at::empty(size, elements.options()) : elements.as_strided(size, stride, offset).clone();
  return t;
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> unpickle_state_dict(const std::vector<char>& pickle,
                                                                     const StorageBytes& storage) {
  const Ref top = PickleMachine(pickle, storage).run();
  if (top->kind != Value::Kind::Dict) throw Error(std::string("it holds a ") + kind_name(top->kind) + ", not a state dict");
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& [key, value] : top->dict) {
    if (key->kind != Value::Kind::String) throw Error(std::string("a key of the state dict is a ") + kind_name(key->kind));
    if (value->kind != Value::Kind::Tensor)
      throw Error("'" + key->text + "' is a " + kind_name(value->kind) + ", not a tensor");
    out.emplace_back(key->text, value->tensor);
  }
  return out;
}

namespace {

// Opcodes and arguments, appended to a byte buffer.
struct PickleWriter {
  std::vector<char> out;
  void op(uint8_t code) { out.push_back(char(code)); }
  void raw(uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(char((value >> (8 * i)) & 0xff));
  }
  void text(const std::string& s) {  // BINUNICODE
    op('X');
    raw(s.size(), 4);
    out.insert(out.end(), s.begin(), s.end());
  }
  void integer(int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');  // BININT
      raw(uint64_t(uint32_t(int32_t(v))), 4);
    } else {
      op(0x8a);  // LONG1, eight bytes
      out.push_back(8);
      raw(uint64_t(v), 8);
    }
  }
  void global(const std::string& module, const std::string& name) {
    op('c');
    out.insert(out.end(), module.begin(), module.end());
    out.push_back('\n');
    out.insert(out.end(), name.begin(), name.end());
    out.push_back('\n');
  }
  void ints(at::IntArrayRef values) {
    op('(');
    for (int64_t v : values) integer(v);
    op('t');
  }
  void empty_ordered_dict() {
    global("collections", "OrderedDict");
    op(')');
    op('R');
  }
};

std::string storage_class(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: return "FloatStorage";
    case at::kDouble: return "DoubleStorage";
    case at::kHalf: return "HalfStorage";
    case at::kBFloat16: return "BFloat16Storage";
    case at::kLong: return "LongStorage";
    case at::kInt: return "IntStorage";
    default: throw Error(std::string("cannot write a tensor of ") + c10::toString(dtype));
  }
}

}  // namespace

std::vector<char> pickle_state_dict(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                                    std::vector<at::Tensor>* storages) {
  PickleWriter w;
  w.op(0x80);  // PROTO 2
  w.out.push_back(2);
  w.empty_ordered_dict();
  w.op('(');
  for (const auto& [key, tensor] : tensors) {
    const at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
    const std::string id = std::to_string(storages->size());
    storages->push_back(t);
    w.text(key);
    w.global("torch._utils", "_rebuild_tensor_v2");
    w.op('(');
    w.op('(');  // the persistent id: ('storage', type, key, location, numel)
    w.text("storage");
    w.global("torch", storage_class(t.scalar_type()));
    w.text(id);
    w.text("cpu");
    w.integer(t.numel());
    w.op('t');
    w.op('Q');  // BINPERSID
    w.integer(0);  // storage offset
    w.ints(t.sizes());
    w.ints(t.strides());
    w.op(0x89);  // requires_grad: False
    w.empty_ordered_dict();  // backward hooks
    w.op('t');
    w.op('R');
  }
  w.op('u');  // SETITEMS
  w.op('.');
  return w.out;
}

}  // namespace translution
