#include "io/state_dict_pickle.h"

#include <climits>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>

#include <ATen/ATen.h>

#include "util/error.h"

namespace translution {
namespace {

// A value is its index in the machine's table. Containers hold indices, so the
// memo, the stack and a container refer to the same dict while SETITEMS fills it,
// and nothing is freed recursively.
using Ref = uint32_t;
struct Value {
  enum class Kind {
    None,
    Bool,
    Int,
    Float,
    String,
    Tuple,
    List,
    Dict,
    Object,
    Global,
    Storage,
    Tensor,
    Mark
  } kind;
  int64_t integer = 0;
  double real = 0;
  std::string text;                   // String; Global "module.name"; Object its class; Storage key
  std::vector<Ref> items;             // Tuple, List; Dict and Object: key, value, key, value, ...
  at::ScalarType dtype = at::kFloat;  // Storage
  at::Tensor tensor;                  // Storage, Tensor
  int64_t depth =
      0;  // containers: 1 + the deepest item when it was added (a later change inside an item is not seen)
};
using Kind = Value::Kind;

const char* kind_name(Kind k) {
  static const char* names[] = {"None", "bool",   "int",    "float",   "string", "tuple", "list",
                                "dict", "object", "global", "storage", "tensor", "mark"};
  return names[int(k)];
}

std::string count_text(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

[[noreturn]] void limit(const std::string& what, int64_t bound) {
  throw Error("the pickle " + what + " " + count_text(bound) + ", this reader's limit");
}

// The bytes of the names and texts a pickle yields, each copy counted.
class TextBudget {
 public:
  void spend(size_t bytes) {
    spent_ += bytes;
    if (spent_ > kMaxPickleTextBytes)
      limit("yields names and texts of more bytes than", int64_t(kMaxPickleTextBytes));
  }

 private:
  uint64_t spent_ = 0;
};

// torch.save names a storage's element type by its legacy class.
bool storage_dtype(const std::string& global, at::ScalarType* dtype) {
  static const std::map<std::string, at::ScalarType> types = {
      {"torch.FloatStorage", at::kFloat}, {"torch.DoubleStorage", at::kDouble},
      {"torch.HalfStorage", at::kHalf},   {"torch.BFloat16Storage", at::kBFloat16},
      {"torch.LongStorage", at::kLong},   {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort}, {"torch.CharStorage", at::kChar},
      {"torch.ByteStorage", at::kByte},   {"torch.BoolStorage", at::kBool}};
  const auto it = types.find(global);
  if (it == types.end()) return false;
  *dtype = it->second;
  return true;
}

// LibTorch's OutputArchive pickles each module as an object of "__torch__.Module"
// or "__torch__.___torch_mangle_<n>.Module": classes with attributes and no code run.
bool module_class(const std::string& name) {
  if (name == "__torch__.Module") return true;
  const std::string prefix = "__torch__.___torch_mangle_", suffix = ".Module";
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  for (size_t i = prefix.size(); i < name.size() - suffix.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  return true;
}

class PickleMachine {
 public:
  PickleMachine(const std::vector<char>& bytes, const StorageBytes& storage, bool modules)
      : bytes_(bytes), storage_(storage), modules_(modules) {
    mark_ = make(Kind::Mark);
  }

  Ref run() {
    while (true) {
      const uint8_t op = byte();
      if (op == '.') break;  // STOP
      if (!structure(op) && !scalar(op) && !memo(op) && !call(op)) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        throw Error(std::string("the pickle uses opcode ") + hex + ", which no " +
                    (modules_ ? "LibTorch archive" : "state dict") + " needs");
      }
    }
    if (stack_.size() != 1) throw Error("the pickle does not end with one value");
    return stack_.back();
  }

  const Value& value(Ref r) const { return values_[r]; }
  size_t value_count() const { return values_.size(); }

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
    for (char c = *take(1); c != '\n'; c = *take(1)) {
      if (s.size() >= kMaxPickleNameBytes) limit("names a global longer than", int64_t(kMaxPickleNameBytes));
      s += c;
    }
    return s;
  }

  // The value table.
  Ref make(Kind kind) {
    if (int64_t(values_.size()) >= kMaxPickleValues) limit("makes more values than", kMaxPickleValues);
    values_.emplace_back();
    values_.back().kind = kind;
    if (kind == Kind::Tuple || kind == Kind::List || kind == Kind::Dict || kind == Kind::Object)
      values_.back().depth = 1;
    return Ref(values_.size() - 1);
  }
  void add(Ref container, Ref item) {
    Value& c = values_[container];
    if (int64_t(c.items.size()) >= kMaxPickleContainer)
      limit("puts in one container more entries than", kMaxPickleContainer);
    if (++entries_ > kMaxPickleEntries) limit("puts in its containers more entries than", kMaxPickleEntries);
    c.items.push_back(item);
    c.depth = std::max(c.depth, values_[item].depth + 1);
    if (c.depth > kMaxPickleDepth) limit("nests deeper than", kMaxPickleDepth);
  }

  // The stack.
  Ref pop() {
    if (stack_.empty()) throw Error("the pickle pops an empty stack");
    const Ref v = stack_.back();
    stack_.pop_back();
    if (v == mark_) throw Error("the pickle uses a mark as a value");
    return v;
  }
  std::vector<Ref> pop_to_mark() {
    size_t i = stack_.size();
    while (i > 0 && stack_[i - 1] != mark_) --i;
    if (i == 0) throw Error("the pickle closes a mark it never set");
    std::vector<Ref> items(stack_.begin() + long(i), stack_.end());
    stack_.resize(i - 1);
    return items;
  }
  Ref top() {
    if (stack_.empty()) throw Error("the pickle reads an empty stack");
    return stack_.back();
  }
  void push(Ref v) {
    if (int64_t(stack_.size()) >= kMaxPickleStack) limit("grows its stack past", kMaxPickleStack);
    stack_.push_back(v);
  }

  Ref tuple(const std::vector<Ref>& items) {
    const Ref t = make(Kind::Tuple);
    for (Ref item : items) add(t, item);
    return t;
  }
  Ref container(Ref r, Kind kind, const char* op) {
    if (values_[r].kind != kind)
      throw Error(std::string("the pickle ") + op + " a " + kind_name(values_[r].kind) + ", not a " +
                  kind_name(kind));
    return r;
  }

  bool structure(uint8_t op);
  bool scalar(uint8_t op);
  bool memo(uint8_t op);
  bool call(uint8_t op);
  void set_items(Ref dict, const std::vector<Ref>& flat);
  Ref global(const std::string& name);
  Ref storage(Ref id);
  Ref rebuild_tensor(const std::vector<Ref>& args);
  void build(Ref state);

  const std::vector<char>& bytes_;
  const StorageBytes& storage_;
  const bool modules_;
  size_t pos_ = 0;
  std::deque<Value> values_;
  int64_t entries_ = 0;
  Ref mark_ = 0;
  std::vector<Ref> stack_;
  std::map<uint64_t, Ref> memo_;
  std::map<std::string, at::Tensor> storages_;  // by key: tensors may share one
  uint64_t storage_bytes_ = 0, rebuilt_bytes_ = 0;
};

// Containers and the mark.
bool PickleMachine::structure(uint8_t op) {
  switch (op) {
    case '(': push(mark_); return true;                 // MARK
    case ')': push(make(Kind::Tuple)); return true;     // EMPTY_TUPLE
    case 't': push(tuple(pop_to_mark())); return true;  // TUPLE
    case 0x85: {
      const Ref a = pop();
      push(tuple({a}));
      return true;
    }  // TUPLE1
    case 0x86: {
      const Ref b = pop(), a = pop();
      push(tuple({a, b}));
      return true;
    }  // TUPLE2
    case 0x87: {
      const Ref c = pop(), b = pop(), a = pop();
      push(tuple({a, b, c}));
      return true;
    }                                               // TUPLE3
    case ']': push(make(Kind::List)); return true;  // EMPTY_LIST
    case 'a': {
      const Ref v = pop();
      add(container(top(), Kind::List, "appends to"), v);
      return true;
    }            // APPEND
    case 'e': {  // APPENDS
      const std::vector<Ref> vs = pop_to_mark();
      const Ref list = container(top(), Kind::List, "appends to");
      for (Ref v : vs) add(list, v);
      return true;
    }
    case '}': push(make(Kind::Dict)); return true;  // EMPTY_DICT
    case 's': {
      const Ref v = pop(), k = pop();
      set_items(top(), {k, v});
      return true;
    }  // SETITEM
    case 'u': {
      const std::vector<Ref> flat = pop_to_mark();
      set_items(top(), flat);
      return true;
    }  // SETITEMS
    default: return false;
  }
}

void PickleMachine::set_items(Ref dict, const std::vector<Ref>& flat) {
  container(dict, Kind::Dict, "sets items on");
  if (flat.size() % 2) throw Error("the pickle sets a key without a value");
  for (Ref item : flat) add(dict, item);
}

// Numbers, strings, None, booleans; protocol and framing.
bool PickleMachine::scalar(uint8_t op) {
  auto integer = [&](int64_t v) {
    const Ref r = make(Kind::Int);
    values_[r].integer = v;
    push(r);
  };
  auto text = [&](uint64_t n) {
    const char* p =
        take(size_t(std::min<uint64_t>(n, bytes_.size())));  // take() refuses what the pickle lacks
    const Ref r = make(Kind::String);
    values_[r].text.assign(p, size_t(n));
    push(r);
  };
  switch (op) {
    case 0x80: byte(); return true;     // PROTO
    case 0x95: little(8); return true;  // FRAME
    case 'N': push(make(Kind::None)); return true;
    case 0x88:
    case 0x89: {
      const Ref r = make(Kind::Bool);
      values_[r].integer = op == 0x88;
      push(r);
      return true;
    }
    case 'K': integer(int64_t(little(1))); return true;                     // BININT1
    case 'M': integer(int64_t(little(2))); return true;                     // BININT2
    case 'J': integer(int64_t(int32_t(uint32_t(little(4))))); return true;  // BININT
    case 0x8a: {                                                            // LONG1
      const size_t n = byte();
      if (n > 8) throw Error("the pickle holds an integer wider than 64 bits");
      uint64_t v = n ? little(n) : 0;
      if (n && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n);  // sign-extend
      integer(int64_t(v));
      return true;
    }
    case 'G': {  // BINFLOAT, big-endian
      const char* p = take(8);
      uint64_t bits = 0;
      for (int i = 0; i < 8; ++i) bits = bits << 8 | uint8_t(p[i]);
      const Ref r = make(Kind::Float);
      std::memcpy(&values_[r].real, &bits, 8);
      push(r);
      return true;
    }
    case 'X': text(little(4)); return true;   // BINUNICODE
    case 0x8c: text(little(1)); return true;  // SHORT_BINUNICODE
    case 0x8d: text(little(8)); return true;  // BINUNICODE8
    default: return false;
  }
}

bool PickleMachine::memo(uint8_t op) {
  auto put = [&](uint64_t key) {
    if (int64_t(memo_.size()) >= kMaxPickleMemo && !memo_.count(key))
      limit("memoizes more values than", kMaxPickleMemo);
    memo_[key] = top();
  };
  auto get = [&](uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) throw Error("the pickle reads a memo entry it never wrote");
    push(it->second);
  };
  switch (op) {
    case 'q': put(little(1)); return true;      // BINPUT
    case 'r': put(little(4)); return true;      // LONG_BINPUT
    case 0x94: put(memo_.size()); return true;  // MEMOIZE
    case 'h': get(little(1)); return true;      // BINGET
    case 'j': get(little(4)); return true;      // LONG_BINGET
    default: return false;
  }
}

Ref PickleMachine::global(const std::string& name) {
  at::ScalarType unused;
  const bool allowed = name == "collections.OrderedDict" || name == "torch._utils._rebuild_tensor_v2" ||
                       name == "torch._utils._rebuild_parameter" || storage_dtype(name, &unused) ||
                       (modules_ && module_class(name));
  if (!allowed)
    throw Error("the pickle asks for Python's " + name +
                "; a state dict holds only tensors in plain containers");
  const Ref g = make(Kind::Global);
  values_[g].text = name;
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
      const Ref name = pop(), module = pop();
      if (values_[name].kind != Kind::String || values_[module].kind != Kind::String)
        throw Error("the pickle names a global by something other than strings");
      push(global(values_[module].text + "." + values_[name].text));
      return true;
    }
    case 'Q': push(storage(pop())); return true;  // BINPERSID
    case 'R': {                                   // REDUCE
      const Ref args = pop(), fn = pop();
      if (values_[fn].kind != Kind::Global || values_[args].kind != Kind::Tuple)
        throw Error("the pickle calls something that is not an allowed function");
      const std::string& name = values_[fn].text;
      const std::vector<Ref>& items = values_[args].items;  // a tuple never changes once made
      if (name == "collections.OrderedDict" && items.empty())
        push(make(Kind::Dict));
      else if (name == "torch._utils._rebuild_tensor_v2")
        push(rebuild_tensor(items));
      else if (name == "torch._utils._rebuild_parameter" && !items.empty() &&
               values_[items[0]].kind == Kind::Tensor)
        push(items[0]);
      else
        throw Error("the pickle calls " + name + " in a way no state dict does");
      return true;
    }
    case 0x81: {  // NEWOBJ: an empty LibTorch module, given its attributes by BUILD
      const Ref args = pop(), cls = pop();
      if (!modules_ || values_[cls].kind != Kind::Global || !module_class(values_[cls].text) ||
          values_[args].kind != Kind::Tuple || !values_[args].items.empty())
        throw Error("the pickle creates an object that is not a LibTorch module");
      const Ref object = make(Kind::Object);
      values_[object].text = values_[cls].text;
      push(object);
      return true;
    }
    case 'b': build(pop()); return true;  // BUILD
    default: return false;
  }
}

// An OrderedDict's attributes (its _metadata) are of no use here; a module's are its contents.
void PickleMachine::build(Ref state) {
  const Ref target = top();
  if (values_[target].kind == Kind::Dict) return;
  if (values_[target].kind != Kind::Object || values_[state].kind != Kind::Dict ||
      !values_[target].items.empty())
    throw Error(std::string("the pickle sets the state of a ") + kind_name(values_[target].kind) +
                " in a way no archive does");
  const std::vector<Ref> items = values_[state].items;
  for (Ref item : items) add(target, item);
}

// ('storage', <type>, key, location, numel) -> the storage's elements.
Ref PickleMachine::storage(Ref id) {
  const Value& t = values_[id];
  if (t.kind != Kind::Tuple || t.items.size() != 5 || values_[t.items[0]].text != "storage" ||
      values_[t.items[1]].kind != Kind::Global || values_[t.items[2]].kind != Kind::String ||
      values_[t.items[4]].kind != Kind::Int)
    throw Error("the pickle refers to a persistent object that is not a tensor storage");
  const std::string type = values_[t.items[1]].text, key = values_[t.items[2]].text;
  const int64_t numel = values_[t.items[4]].integer;
  at::ScalarType dtype;
  if (!storage_dtype(type, &dtype)) throw Error("unknown storage type " + type);
  if (!storages_.count(key)) {
    const std::vector<char> bytes = storage_(key);
    const size_t element = at::elementSize(dtype);
    if (numel < 0 || uint64_t(numel) > bytes.size() / element)
      throw Error("storage " + key + " holds " + std::to_string(bytes.size()) + " bytes, not the " +
                  std::to_string(numel) + " elements of " + std::to_string(element) + " bytes it claims");
    at::Tensor elements = at::empty({numel}, at::TensorOptions(dtype));
    if (numel) std::memcpy(elements.data_ptr(), bytes.data(), size_t(numel) * element);
    storage_bytes_ += uint64_t(numel) * element;
    storages_[key] = elements;
  }
  const Ref s = make(Kind::Storage);
  values_[s].dtype = dtype;
  values_[s].text = key;
  values_[s].tensor = storages_.at(key);
  return s;
}

constexpr size_t kMaxTensorRank = 64;

std::vector<int64_t> integers(const Value& tuple, const std::deque<Value>& values, const char* what) {
  if (tuple.kind != Kind::Tuple) throw Error(std::string("a tensor's ") + what + " is not a tuple");
  if (tuple.items.size() > kMaxTensorRank)
    throw Error(std::string("a tensor's ") + what + " has more than " + std::to_string(kMaxTensorRank) +
                " dimensions");
  std::vector<int64_t> out;
  for (Ref r : tuple.items) {
    if (values[r].kind != Kind::Int)
      throw Error(std::string("a tensor's ") + what + " holds a " + kind_name(values[r].kind));
    out.push_back(values[r].integer);
  }
  return out;
}

// _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]): a copy, checked to lie
// inside its storage. A state dict's tensors never repeat elements, so none has more than its storage holds.
Ref PickleMachine::rebuild_tensor(const std::vector<Ref>& args) {
  if (args.size() < 4 || values_[args[0]].kind != Kind::Storage || values_[args[1]].kind != Kind::Int)
    throw Error("the pickle rebuilds a tensor from arguments torch.save does not write");
  const at::Tensor elements = values_[args[0]].tensor;
  const std::string& key = values_[args[0]].text;
  const int64_t offset = values_[args[1]].integer, available = elements.numel();
  const std::vector<int64_t> size = integers(values_[args[2]], values_, "size"),
                             stride = integers(values_[args[3]], values_, "stride");
  if (size.size() != stride.size()) throw Error("a tensor's size and stride differ in length");
  int64_t numel = 1, last = offset;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] < 0 || stride[d] < 0) throw Error("a tensor has a negative size or stride");
    if (size[d] == 0)
      numel = 0;
    else if (numel > available / size[d])
      numel = available + 1;  // more than the storage holds, without overflow
    else
      numel *= size[d];
  }
  if (numel > available) throw Error("a tensor has more elements than storage " + key + " holds");
  if (offset < 0 || offset > available) throw Error("a tensor starts past the end of storage " + key);
  for (size_t d = 0; d < size.size() && numel > 0; ++d) {
    int64_t reach;  // (size - 1) * stride, each at most the storage's length once no overflow
    if (__builtin_mul_overflow(size[d] - 1, stride[d], &reach) ||
        __builtin_add_overflow(last, reach, &last) || last >= available)
      throw Error("a tensor reaches past the end of storage " + key);
  }
  // Each tensor is a copy: tensors that view a storage many times over would multiply the file's size.
  rebuilt_bytes_ += uint64_t(numel) * elements.element_size();
  if (rebuilt_bytes_ > 4 * storage_bytes_ + (uint64_t(1) << 20))
    throw Error("the pickle rebuilds tensors of more than four times the bytes its storages hold");
  const Ref t = make(Kind::Tensor);
  values_[t].tensor =
      numel == 0 ? at::empty(size, elements.options()) : elements.as_strided(size, stride, offset).clone();
  return t;
}

PickledLeaf leaf(const Value& v, const std::string& path) {
  PickledLeaf out;
  switch (v.kind) {
    case Kind::None: out.kind = PickledLeaf::Kind::None; break;
    case Kind::Bool:
      out.kind = PickledLeaf::Kind::Bool;
      out.integer = v.integer;
      break;
    case Kind::Int:
      out.kind = PickledLeaf::Kind::Int;
      out.integer = v.integer;
      break;
    case Kind::Float:
      out.kind = PickledLeaf::Kind::Float;
      out.real = v.real;
      break;
    case Kind::String:
      out.kind = PickledLeaf::Kind::String;
      out.text = v.text;
      break;
    case Kind::Tensor:
      out.kind = PickledLeaf::Kind::Tensor;
      out.tensor = v.tensor;
      break;
    default: throw Error(std::string("the pickle holds a ") + kind_name(v.kind) + " at '" + path + "'");
  }
  return out;
}

// Depth first without recursion; each container once, so a shared or cyclic one cannot multiply the work.
std::vector<std::pair<std::string, PickledLeaf>> flatten(const PickleMachine& m, Ref root) {
  struct Pending {
    Ref ref;
    std::string path;
    int64_t depth;
  };
  std::vector<Pending> todo{{root, "", 0}};
  std::vector<bool> seen(m.value_count(), false);
  std::vector<std::pair<std::string, PickledLeaf>> out;
  TextBudget text;
  while (!todo.empty()) {
    Pending p = std::move(todo.back());
    todo.pop_back();
    const Value& v = m.value(p.ref);
    const bool keyed = v.kind == Kind::Dict || v.kind == Kind::Object;
    if (!keyed && v.kind != Kind::Tuple && v.kind != Kind::List) {
      text.spend(v.kind == Kind::String ? v.text.size() : 0);
      out.emplace_back(p.path, leaf(v, p.path));
      continue;
    }
    if (seen[p.ref]) throw Error("the pickle puts one container in two places ('" + p.path + "')");
    seen[p.ref] = true;
    if (p.depth >= kMaxPickleDepth) limit("nests deeper than", kMaxPickleDepth);
    const size_t step = keyed ? 2 : 1;
    for (size_t i = v.items.size(); i >= step;
         i -= step) {  // pushed last to first: visited in the pickle's order
      std::string name;
      if (keyed) {
        const Value& key = m.value(v.items[i - 2]);
        if (key.kind != Kind::String) throw Error("a key under '" + p.path + "' is a " + kind_name(key.kind));
        name = key.text;
      } else {
        name = std::to_string(i - 1);
      }
      std::string path = p.path.empty() ? name : p.path + "." + name;
      if (path.size() > kMaxPickleNameBytes)
        limit("names a value by a path longer than", int64_t(kMaxPickleNameBytes));
      text.spend(path.size());
      todo.push_back({v.items[i - 1], std::move(path), p.depth + 1});
    }
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> unpickle_state_dict(const std::vector<char>& pickle,
                                                                    const StorageBytes& storage) {
  PickleMachine machine(pickle, storage, false);
  const Value& top = machine.value(machine.run());
  if (top.kind != Kind::Dict)
    throw Error(std::string("it holds a ") + kind_name(top.kind) + ", not a state dict");
  std::vector<std::pair<std::string, at::Tensor>> out;
  TextBudget text;
  for (size_t i = 0; i + 1 < top.items.size(); i += 2) {
    const Value &key = machine.value(top.items[i]), &value = machine.value(top.items[i + 1]);
    if (key.kind != Kind::String)
      throw Error(std::string("a key of the state dict is a ") + kind_name(key.kind));
    text.spend(key.text.size());
    if (value.kind != Kind::Tensor)
      throw Error("'" + key.text + "' is a " + kind_name(value.kind) + ", not a tensor");
    out.emplace_back(key.text, value.tensor);
  }
  return out;
}

std::vector<std::pair<std::string, PickledLeaf>> unpickle_module(const std::vector<char>& pickle,
                                                                 const StorageBytes& storage) {
  PickleMachine machine(pickle, storage, true);
  const Ref root = machine.run();
  if (machine.value(root).kind != Kind::Object)
    throw Error(std::string("it holds a ") + kind_name(machine.value(root).kind) + ", not a LibTorch module");
  return flatten(machine, root);
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
    w.op('Q');     // BINPERSID
    w.integer(0);  // storage offset
    w.ints(t.sizes());
    w.ints(t.strides());
    w.op(0x89);              // requires_grad: False
    w.empty_ordered_dict();  // backward hooks
    w.op('t');
    w.op('R');
  }
  w.op('u');  // SETITEMS
  w.op('.');
  return w.out;
}

}  // namespace translution
