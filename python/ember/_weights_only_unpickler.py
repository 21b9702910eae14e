"""The unpickler of ember.load(weights_only=True), as PyTorch's torch._weights_only_unpickler:
it interprets the opcodes of a protocol-2 pickle itself, so no global is ever imported.
A GLOBAL resolves only through an allowlist (tensors, storages, dtypes, devices, Size,
Parameter, OrderedDict/Counter, set/bytearray/complex, `_codecs.encode`) plus what
the user adds with ember.serialization.add_safe_globals; REDUCE calls only those,
BUILD sets state only on Tensor, Parameter, OrderedDict and allowlisted types, and
APPEND/SETITEM only fill lists and dicts. Anything else raises pickle.UnpicklingError.
"""
from _compat_pickle import IMPORT_MAPPING, NAME_MAPPING
from collections import Counter, OrderedDict
from pickle import UnpicklingError, decode_long
from struct import unpack
from sys import maxsize

# Never allowed, even if a user allowlists a function from them.
_blocklisted_modules = ["sys", "os", "posix", "nt"]

_marked_safe_globals_set: set = set()


def _add_safe_globals(safe_globals):
    global _marked_safe_globals_set
    _marked_safe_globals_set = _marked_safe_globals_set.union(set(safe_globals))


def _get_safe_globals():
    return list(_marked_safe_globals_set)


def _clear_safe_globals():
    global _marked_safe_globals_set
    _marked_safe_globals_set = set()


def _remove_safe_globals(globals_to_remove):
    global _marked_safe_globals_set
    _marked_safe_globals_set = _marked_safe_globals_set - set(globals_to_remove)


class _safe_globals:
    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        _add_safe_globals(self.safe_globals)

    def __exit__(self, type, value, tb):
        _remove_safe_globals(self.safe_globals)


def _get_user_allowed_globals():
    rc = {}
    for f in _marked_safe_globals_set:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got tuple of "
                                 f"length: {len(f)}")
            if type(f[1]) is not str:
                raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: {type(f[1])}")
            f, name = f
            rc[name] = f
        else:
            rc[f"{f.__module__}.{f.__qualname__}"] = f
    return rc


def _lookup_user_global(full_path, user):
    # A program written for torch allowlists torch.X, which is ember's X here: the file names torch.X.
    if full_path in user:
        return True, user[full_path]
    if full_path.startswith("torch."):
        ember_path = "ember." + full_path[len("torch."):]
        if ember_path in user:
            return True, user[ember_path]
    return False, None


class LazyGlobal:
    """An allowlisted global whose module is imported only when a file names it (ember.nn is costly)."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def resolve(self):
        import importlib
        return getattr(importlib.import_module(self.module), self.name)


def _read_line(readline):
    line = readline()
    if not line.endswith(b"\n"):
        raise UnpicklingError("pickle data was truncated")
    return line[:-1].decode("utf-8")


def _read_global_instruction(readline):
    module, name = _read_line(readline), _read_line(readline)
    # torch.save's protocol 2 names Python 2 modules (__builtin__): map them as pickle does.
    if (module, name) in NAME_MAPPING:
        module, name = NAME_MAPPING[(module, name)]
    elif module in IMPORT_MAPPING:
        module = IMPORT_MAPPING[module]
    return module, name


def _unsupported_global_message(full_path):
    if full_path.startswith("builtins."):
        full_path = full_path[len("builtins."):]
    return (f"Unsupported global: GLOBAL {full_path} was not an allowed global by default. Please use "
            f"`torch.serialization.add_safe_globals([{full_path}])` or the `torch.serialization.safe_globals("
            f"[{full_path}])` context manager to allowlist this global if you trust this class/function.")


class Unpickler:
    """Loads one protocol-2 pickle from `file`, resolving globals through `allowed_globals`
    (a dict full name -> object, built by ember.serialization) and the user's safe globals."""

    def __init__(self, file, *, allowed_globals, encoding="bytes"):
        self.encoding = encoding
        self.readline = file.readline
        self.read = file.read
        self.memo = {}
        self.proto = -1
        self._allowed = dict(allowed_globals)  # values: objects, or LazyGlobal resolved on first use

    def _find_global(self, module, name):
        full_path = f"{module}.{name}"
        if module in _blocklisted_modules:
            raise UnpicklingError(f"Trying to load unsupported GLOBAL {full_path} whose module {module} is blocked.")
        if full_path in self._allowed:
            return self._resolve(full_path)
        found, value = _lookup_user_global(full_path, _get_user_allowed_globals())
        if found:
            return value
        raise UnpicklingError(_unsupported_global_message(full_path))

    def _resolve(self, full_path):
        value = self._allowed[full_path]
        if isinstance(value, LazyGlobal):
            value = self._allowed[full_path] = value.resolve()
        return value

    def _is_allowed(self, obj):
        # By identity: the object on the stack may be anything (a tensor's == is elementwise).
        return any(obj is v for v in self._allowed.values()) or any(
            obj is v for v in _get_user_allowed_globals().values())

    def load(self):
        """Reads a pickled object representation from the file; returns the object."""
        self.metastack = []
        self.stack = []
        self.append = self.stack.append
        read = self.read
        while True:
            key = read(1)
            if not key:
                raise EOFError
            op = key[0]
            handler = _HANDLERS.get(op)
            if handler is None:
                raise UnpicklingError(f"Unsupported operand {op}")
            if handler(self):  # STOP
                if not self.stack:
                    raise UnpicklingError("unpickling stack underflow")
                return self.stack.pop()

    def pop_mark(self):
        items = self.stack
        self.stack = self.metastack.pop()
        self.append = self.stack.append
        return items

    def _read_exact(self, n):
        data = self.read(n)
        if len(data) != n:
            raise UnpicklingError("pickle data was truncated")
        return data

    def persistent_load(self, pid):
        raise UnpicklingError("unsupported persistent id encountered")

    # ---------------------------------------------------------------- risky opcodes
    def _op_global(self):
        module, name = _read_global_instruction(self.readline)
        self.append(self._find_global(module, name))

    def _op_newobj(self):
        args = self.stack.pop()
        cls = self.stack.pop()
        if cls is self._resolve("torch.nn.parameter.Parameter"):
            self.append(cls(*args))
        elif self._is_allowed(cls):
            self.append(cls.__new__(cls, *args))
        else:
            raise UnpicklingError("Can only create new object for nn.Parameter or classes allowlisted via "
                                  f"`add_safe_globals` but got {cls}")

    def _op_reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        if not self._is_allowed(func):
            msg = f"Trying to call reduce for unrecognized function {func}"
            if hasattr(func, "__self__"):
                msg += f" which belongs to {func.__self__}"
            raise UnpicklingError(msg)
        if type(args) is not tuple:
            raise UnpicklingError(f"REDUCE arguments must be a tuple, got {type(args).__name__}")
        try:
            self.stack[-1] = func(*args)
        except TypeError as e:  # wrong arguments from a damaged or hostile file
            raise UnpicklingError(f"Calling {getattr(func, '__qualname__', func)} with the checkpoint's arguments "
                                  f"failed: {e}") from None

    def _op_build(self):
        state = self.stack.pop()
        inst = self.stack[-1]
        if type(inst) is OrderedDict:
            inst.__dict__.update(state)
        elif self._is_allowed(type(inst)):
            if hasattr(inst, "__setstate__"):
                inst.__setstate__(state)
            else:  # as pickle's load_build
                slotstate = None
                if isinstance(state, tuple) and len(state) == 2:
                    state, slotstate = state
                if state:
                    inst.__dict__.update(state)
                if slotstate:
                    for k, v in slotstate.items():
                        setattr(inst, k, v)
        else:
            raise UnpicklingError("Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                                  f"`add_safe_globals`, but got {type(inst)}")

    def _op_binpersid(self):
        pid = self.stack.pop()
        if type(pid) is not tuple and type(pid) is not int:
            raise UnpicklingError(f"persistent_load id must be tuple or int, but got {type(pid)}")
        if type(pid) is tuple and len(pid) > 0 and _as_str(pid[0]) != "storage":
            raise UnpicklingError(f"Only persistent_load of storage is allowed, but got {type(pid[0])}")
        self.append(self.persistent_load(pid))

    # ---------------------------------------------------------------- containers
    def _op_append(self):
        item = self.stack.pop()
        if type(self.stack[-1]) is not list:
            raise UnpicklingError(f"Can only append to lists, but got {type(self.stack[-1])}")
        self.stack[-1].append(item)

    def _op_appends(self):
        items = self.pop_mark()
        if type(self.stack[-1]) is not list:
            raise UnpicklingError(f"Can only extend lists, but got {type(self.stack[-1])}")
        self.stack[-1].extend(items)

    def _check_set_item_target(self, opcode):
        if type(self.stack[-1]) not in (dict, OrderedDict, Counter):
            raise UnpicklingError(f"Can only {opcode} for dict, collections.OrderedDict, collections.Counter, but "
                                  f"got {type(self.stack[-1])}")

    def _op_setitem(self):
        v, k = self.stack.pop(), self.stack.pop()
        self._check_set_item_target("SETITEM")
        self.stack[-1][k] = v

    def _op_setitems(self):
        items = self.pop_mark()
        self._check_set_item_target("SETITEMS")
        if len(items) % 2:
            raise UnpicklingError("SETITEMS needs key/value pairs")
        for i in range(0, len(items), 2):
            self.stack[-1][items[i]] = items[i + 1]

    def _op_mark(self):
        self.metastack.append(self.stack)
        self.stack = []
        self.append = self.stack.append

    def _op_tuple(self):
        items = self.pop_mark()
        self.append(tuple(items))

    def _op_tuple_n(self, n):
        if len(self.stack) < n:
            raise UnpicklingError("unpickling stack underflow")
        items = tuple(self.stack[len(self.stack) - n:])
        del self.stack[len(self.stack) - n:]
        self.append(items)

    # ---------------------------------------------------------------- values
    def _op_binunicode(self):
        (n,) = unpack("<I", self._read_exact(4))
        if n > maxsize:
            raise UnpicklingError("String is too long")
        self.append(str(self._read_exact(n), "utf-8", "surrogatepass"))

    def _op_short_binstring(self):
        data = self._read_exact(self._read_exact(1)[0])
        self.append(data.decode(self.encoding, "strict") if self.encoding != "bytes" else data)

    def _op_get(self, idx):
        if idx not in self.memo:
            raise UnpicklingError(f"Memo value not found at index {idx}")
        self.append(self.memo[idx])

    def _op_put(self, idx):
        if not self.stack:
            raise UnpicklingError("unpickling stack underflow")
        self.memo[idx] = self.stack[-1]

    def _op_proto(self):
        self.proto = self._read_exact(1)[0]
        if self.proto != 2:
            import warnings
            warnings.warn(f"Detected pickle protocol {self.proto} in the checkpoint, which was not the default pickle "
                          "protocol used by `torch.load` (2). The weights_only Unpickler might not support all "
                          "instructions implemented by this protocol, please file an issue for adding support if you "
                          "encounter this.", stacklevel=4)


def encode_latin1(text, encoding="latin1"):
    """_codecs.encode as protocol 2 uses it (bytes pickle as latin-1 text), and no other codec."""
    if type(text) is not str or encoding not in ("latin1", "latin-1"):
        raise UnpicklingError(f"_codecs.encode is allowed for latin1 text only, got {type(text).__name__}, "
                              f"{encoding!r}")
    import codecs
    return codecs.encode(text, "latin1")


def _as_str(value):
    return value.decode("ascii") if isinstance(value, bytes) else value


def _stack_guard(handler):
    # A malformed pickle pops an empty stack, a missing mark or text that is not UTF-8: a clear
    # UnpicklingError, as pickle's.
    def run(self):
        try:
            return handler(self)
        except IndexError:
            raise UnpicklingError("unpickling stack underflow") from None
        except UnicodeDecodeError as e:
            raise UnpicklingError(f"invalid text in the pickle: {e}") from None
        except TypeError as e:  # an unhashable key, a tuple of a non-list: what a damaged pickle builds
            raise UnpicklingError(f"malformed pickle: {e}") from None
    return run


_HANDLERS = {op[0]: _stack_guard(fn) for op, fn in {
    b"c": Unpickler._op_global, b"\x81": Unpickler._op_newobj, b"R": Unpickler._op_reduce, b"b": Unpickler._op_build,
    b"a": Unpickler._op_append, b"e": Unpickler._op_appends, b"s": Unpickler._op_setitem,
    b"u": Unpickler._op_setitems, b"(": Unpickler._op_mark, b"t": Unpickler._op_tuple,
    b"\x85": lambda self: self._op_tuple_n(1), b"\x86": lambda self: self._op_tuple_n(2),
    b"\x87": lambda self: self._op_tuple_n(3),
    b"N": lambda self: self.append(None), b"\x89": lambda self: self.append(False),
    b"\x88": lambda self: self.append(True), b")": lambda self: self.append(()),
    b"]": lambda self: self.append([]), b"}": lambda self: self.append({}), b"\x8f": lambda self: self.append(set()),
    b"J": lambda self: self.append(unpack("<i", self._read_exact(4))[0]),
    b"K": lambda self: self.append(self._read_exact(1)[0]),
    b"M": lambda self: self.append(unpack("<H", self._read_exact(2))[0]),
    b"G": lambda self: self.append(unpack(">d", self._read_exact(8))[0]),
    b"X": Unpickler._op_binunicode, b"U": Unpickler._op_short_binstring, b"Q": Unpickler._op_binpersid,
    b"h": lambda self: self._op_get(self._read_exact(1)[0]),
    b"j": lambda self: self._op_get(unpack("<I", self._read_exact(4))[0]),
    b"q": lambda self: self._op_put(self._read_exact(1)[0]),
    b"r": lambda self: self._op_put(unpack("<I", self._read_exact(4))[0]),
    b"\x8a": lambda self: self.append(decode_long(self._read_exact(self._read_exact(1)[0]))),
    b"\x80": Unpickler._op_proto, b".": lambda self: True,
}.items()}


def globals_in_pickle(file):
    """The full names of the GLOBALs a pickle names (read without running it)."""
    import pickletools
    names = set()
    try:
        for opcode, arg, _ in pickletools.genops(file):
            if opcode.name in ("GLOBAL", "INST"):
                module, name = arg.split(" ", 1)
                module, name = NAME_MAPPING.get((module, name), (IMPORT_MAPPING.get(module, module), name))
                names.add(f"{module}.{name}")
    except (ValueError, EOFError) as e:
        raise UnpicklingError(f"Malformed pickle: {e}") from None
    return names
