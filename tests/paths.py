"""Where things are, for tests in any subfolder."""
import os

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)                          # the repository
SHARED = os.path.join(os.path.dirname(ROOT), "shared")  # ../shared, as CI has it
