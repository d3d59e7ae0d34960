"""Old import path of :mod:`kafkarec.log.segment`: the same module object, not a copy."""
import sys

from kafkarec.log import segment as _module

sys.modules[__name__] = _module
