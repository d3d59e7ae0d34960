"""Old import path of :mod:`kafkarec.log.sidefiles`: the same module object, not a copy."""
import sys

from kafkarec.log import sidefiles as _module

sys.modules[__name__] = _module
