"""Arrays and tensors -> the (buffer, container type, name) operands of numfid._numfid.

NumPy arrays are handed over as they are when C-contiguous and little-endian (no copy); other
layouts are copied into C order once. PyTorch CPU tensors are read through ``tensor.numpy()``
(shared memory, no copy) when contiguous. torch and ml_dtypes are never imported here: an
object is recognised by its type's module and dtype name, so ``import numfid`` needs NumPy only.

The container type names are io/tensor.h's ElementType enumerators: the C++ side reads the
buffer exactly as it reads a .npy file of that dtype (same exactness rules, same messages).
"""

import numpy as np

# NumPy dtypes -> container type.
_NUMPY = {
    np.dtype(np.float16): "F16",
    np.dtype(np.float32): "F32",
    np.dtype(np.float64): "F64",
    np.dtype(np.int8): "I8",
    np.dtype(np.int16): "I16",
    np.dtype(np.int32): "I32",
    np.dtype(np.uint8): "U8",
    np.dtype(np.uint16): "U16",
    np.dtype(np.uint32): "U32",
}

# ml_dtypes dtype names -> (numfid format, container type). bfloat16 and the OCP fp8 types
# have container types of their own (read as their bit patterns, no copy; values of another
# declared format are read from them as from a float32 array); the other ml_dtypes types are
# widened to float32 first (exact: every one of their values is a float32), then read as values.
_ML_DTYPES = {
    "bfloat16": ("bf16", "BF16"),
    "float8_e4m3fn": ("fp8_e4m3", "F8_E4M3"),
    "float8_e5m2": ("fp8_e5m2", "F8_E5M2"),
    "float8_e4m3fnuz": ("fp8_e4m3fnuz", "F32"),
    "float8_e5m2fnuz": ("fp8_e5m2fnuz", "F32"),
    "float6_e3m2fn": ("fp6_e3m2", "F32"),
    "float6_e2m3fn": ("fp6_e2m3", "F32"),
    "float4_e2m1fn": ("fp4_e2m1", "F32"),
    "float8_e8m0fnu": ("e8m0", "F32"),
}

# torch dtype names (str(dtype) without "torch.") -> (numfid format or None, container type).
_TORCH = {
    "float32": (None, "F32"),
    "float64": (None, "F64"),
    "float16": (None, "F16"),
    "bfloat16": ("bf16", "BF16"),
    "float8_e4m3fn": ("fp8_e4m3", "F8_E4M3"),
    "float8_e5m2": ("fp8_e5m2", "F8_E5M2"),
    "float8_e4m3fnuz": ("fp8_e4m3fnuz", "F32"),
    "float8_e5m2fnuz": ("fp8_e5m2fnuz", "F32"),
    "int8": (None, "I8"),
    "int16": (None, "I16"),
    "int32": (None, "I32"),
    "uint8": (None, "U8"),
}

# Unsigned views of the container types that travel as bit patterns.
_UNSIGNED = {"BF16": (np.uint16, "int16"), "F8_E4M3": (np.uint8, "uint8"), "F8_E5M2": (np.uint8, "uint8")}


def is_torch_tensor(x):
    """True for a torch.Tensor (recognised without importing torch)."""
    return any(c.__module__.split(".")[0] == "torch" and c.__name__ == "Tensor" for c in type(x).__mro__)


def _c_order(a):
    """`a` C-contiguous and little-endian: itself when it already is (no copy)."""
    if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and not np.little_endian):
        a = a.astype(a.dtype.newbyteorder("<"))
    # Not np.ascontiguousarray: it makes a 0-d array 1-d, and results keep their operand's shape.
    return a if a.flags.c_contiguous else np.array(a, order="C")


def _on_cpu(t, name):
    """A torch tensor detached, with its values materialised, on the CPU: what .numpy() takes.
    A tensor with no values to read (the meta device) or not dense (sparse layouts) is refused
    naming `name` (torch's own exception named neither the argument nor the way out)."""
    if t.device.type == "meta":
        raise ValueError(f"{name}: a torch tensor on the meta device holds no values to judge")
    layout = str(getattr(t, "layout", "torch.strided")).replace("torch.", "")  # torch-like objects may have none
    if layout != "strided":
        raise TypeError(f"{name}: a torch tensor of layout {layout}: give a dense tensor (t.to_dense())")
    t = t.detach()
    # A lazily negated or conjugated view (torch's negative/conjugate bit) refuses .numpy():
    # materialised here (no copy for a tensor without the bit; older torch has neither method).
    for resolve in ("resolve_conj", "resolve_neg"):
        if hasattr(t, resolve):
            t = getattr(t, resolve)()
    if t.device.type != "cpu":
        t = t.cpu()  # one copy off the device: the check runs on the CPU
    return t


def _torch_array(t, name):
    """A torch tensor -> (numpy array sharing its memory where possible, container, format)."""
    dtype = str(t.dtype).replace("torch.", "")
    if dtype not in _TORCH:
        raise TypeError(f"{name}: torch dtype {dtype} is not supported ({', '.join(_TORCH)})")
    fmt, container = _TORCH[dtype]
    t = _on_cpu(t, name).contiguous()  # no copy when already contiguous
    if container in _UNSIGNED:
        import torch  # reached only with a torch tensor in hand, so torch is importable

        unsigned, torch_view = _UNSIGNED[container]
        return t.view(getattr(torch, torch_view)).numpy().view(unsigned), container, fmt
    if container == "F32" and fmt is not None:
        return t.float().numpy(), container, fmt  # exact widening
    return t.numpy(), container, fmt


def as_values(x, name):
    """What a probed black box returned, as numbers the library reads (float64 where it can be
    widened exactly): a torch tensor of any float dtype — bf16, fp8, one that requires grad or
    lives on a device — or an ml_dtypes array; anything else unchanged (the library names what
    it cannot read)."""
    if is_torch_tensor(x):
        t = _on_cpu(x, name)
        return (t.double() if t.is_floating_point() else t).numpy()  # every torch float widens exactly
    if isinstance(x, np.ndarray) and x.dtype.names is None and x.dtype.name in _ML_DTYPES:
        return x.astype(np.float64)
    return x


def as_operand(x, name):
    """((buffer, container type, name), format the array's dtype implies or None) for
    numfid._numfid; (None, None) for None."""
    if x is None:
        return None, None
    fmt = None
    if is_torch_tensor(x):
        a, container, fmt = _torch_array(x, name)
    else:
        if isinstance(x, np.ma.MaskedArray):
            # numfid judges every element: a mask would be silently ignored (its hidden values judged).
            masked = int(np.ma.count_masked(x))
            if masked:
                raise ValueError(f"{name}: a masked array (numpy.ma) with {masked} masked element(s): numfid judges "
                                 f"every element; give {name}.data to judge them all, or {name}.filled(value)")
            x = np.ma.getdata(x)
        try:
            a = np.asarray(x)
        except ValueError as e:  # a ragged list: NumPy's message names neither the argument nor the cause
            raise ValueError(f"{name}: not an array of one shape (a ragged nested list?): {e}") from None
        dt = a.dtype
        if dt.names is None and dt.name in _ML_DTYPES:  # ml_dtypes' own dtypes (kind 'V')
            fmt, container = _ML_DTYPES[dt.name]
            a = a.view(_UNSIGNED[container][0]) if container in _UNSIGNED else a.astype(np.float32)
        elif dt.newbyteorder("=") in _NUMPY:
            container = _NUMPY[dt.newbyteorder("=")]
        elif dt.kind == "V" and dt.names is None and dt.itemsize in (1, 2):
            container = "V8" if dt.itemsize == 1 else "V16"  # opaque patterns, as a '|V2' .npy
        else:
            raise TypeError(f"{name}: dtype {dt} is not supported (float16/32/64 values, int8/16/32 values, "
                            f"uint8/16/32 bit patterns of a declared format, ml_dtypes or torch float types)")
    return (_c_order(a), container, name), fmt


def operand(x, name):
    """The (buffer, container type, name) tuple numfid._numfid takes, or None."""
    return as_operand(x, name)[0]
