"""Which records a read_committed consumer would not see, decided offline from
the transaction markers in the data itself.

A transactional data batch belongs to its producer's open transaction; the
producer's next ABORT or COMMIT control batch ends it.  Batches of a
transaction that aborts are left out.  A transaction that has not ended by the
end of the data holds the last stable offset (LSO) at its first offset, and a
read_committed consumer sees nothing at or past the LSO: every batch from the
earliest still-open transaction's first batch on is left out, whatever its
producer.  The rule reads only batch headers plus the one record of each
control batch.
"""
from __future__ import annotations

from kafkarec._core import aborted_batches

__all__ = ["aborted_batches"]
