"""The kinds of the public functions' arguments, checked before numfid._numfid is called.

The binding takes C++ types (int, int64, double, bool, str); an argument pybind11 cannot
convert gives its "incompatible function arguments" listing of the private signatures, which
never says which argument was wrong. Here a wrong kind is a TypeError naming the argument
("numfid.check: axis must be an int, not float"), and an integer outside the C++ type's range a
ValueError naming it. NumPy integers are ints and NumPy floats floats; a bool is neither an int
(axis=True is no axis) nor a float, and a str is never a number (eps='1e-3' is refused, not
parsed).
"""

import numbers

import numpy as np

INT32 = (-2**31, 2**31 - 1)
INT64 = (-2**63, 2**63 - 1)
UINT64 = (0, 2**64 - 1)

_BOOLS = (bool, np.bool_)


def _kind(fn, name, what, value, optional):
    return TypeError(f"numfid.{fn}: {name} must be {what}{' or None' if optional else ''}, not {type(value).__name__}")


def int_arg(fn, name, value, bounds=INT64, *, optional=False):
    """`value` as a Python int (None when optional and None)."""
    if value is None and optional:
        return None
    if isinstance(value, _BOOLS) or not isinstance(value, numbers.Integral):
        raise _kind(fn, name, "an int", value, optional)
    value = int(value)
    if not bounds[0] <= value <= bounds[1]:
        raise ValueError(f"numfid.{fn}: {name}={value} is out of range (an integer from {bounds[0]} to {bounds[1]})")
    return value


def float_arg(fn, name, value, *, optional=False):
    """`value` as a Python float (None when optional and None)."""
    if value is None and optional:
        return None
    if isinstance(value, _BOOLS) or not isinstance(value, numbers.Real):
        raise _kind(fn, name, "a float", value, optional)
    return float(value)


def bool_arg(fn, name, value):
    """True or False (a NumPy bool too); 1, None, 'no' are not."""
    if not isinstance(value, _BOOLS):
        raise TypeError(f"numfid.{fn}: {name} must be True or False, not {value!r}")
    return bool(value)


def str_arg(fn, name, value, *, optional=False):
    """A str (None when optional and None)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _kind(fn, name, "a str", value, optional)
    return value
