# _transactions.pxi: which records a read_committed consumer would not see, decided offline from
# the transaction markers in the data itself.
#
# A transactional data batch belongs to its producer's open transaction; the
# producer's next ABORT or COMMIT control batch ends it.  Batches of a
# transaction that aborts are left out.  A transaction that has not ended by the
# end of the data holds the last stable offset (LSO) at its first offset, and a
# read_committed consumer sees nothing at or past the LSO: every batch from the
# earliest still-open transaction's first batch on is left out, whatever its
# producer.  The rule reads only batch headers plus the one record of each
# control batch.
# kafkarec.transactions is this rule's public home; to_arrow(read_committed=True) uses it here.

import operator


def _marker_type(batch):
    try:
        for record in batch:
            return record.control_type_id
    except DecodeError:
        return None        # an unreadable marker ends the transaction without aborting it
    return None


def aborted_batches(batches, key=None, trusted=None):
    """``key(batch)`` of every batch in ``batches`` (one partition's log, in
    offset order) that a read_committed consumer would not see: those of
    aborted transactions, and all batches at or past the LSO.  A data batch
    for which ``trusted(batch)`` is false (say, its CRC fails) opens and joins
    no transaction, though it is still cut at the LSO.  ``key`` defaults to the
    batch's position."""
    cdef dict open_by_producer = {}     # producer id -> [(batch number, key)] of its open transaction
    cdef set aborted = set()
    # Keys of the batches since the earliest transaction that is still open
    # (only those can fall past the LSO); seen[0] is batch number seen_from.
    cdef list seen = []
    cdef list pending
    cdef Py_ssize_t index = -1, seen_from = 0, lso_index
    cdef bint control
    if key is None:
        key = operator.attrgetter("position")
    for batch in batches:
        index += 1
        if open_by_producer:
            seen.append(key(batch))
        if not batch.is_transactional:      # (the core's reading of the attributes)
            continue
        control = batch.is_control
        if trusted is not None and not control and not trusted(batch):
            continue
        if control:
            pending = open_by_producer.pop(batch.producer_id, [])
            if _marker_type(batch) == 0:      # ABORT
                for entry in pending:
                    aborted.add(entry[1])
            if not open_by_producer:
                seen.clear()
        else:
            if not open_by_producer:
                seen_from = index
                seen.append(key(batch))
            open_by_producer.setdefault(batch.producer_id, []).append((index, seen[len(seen) - 1]))
    if open_by_producer:
        lso_index = min([pending[0][0] for pending in open_by_producer.values()])
        aborted.update(seen[lso_index - seen_from:])
    return aborted
