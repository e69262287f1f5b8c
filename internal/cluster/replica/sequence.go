package replica

import "fmt"

// SequenceError refuses a batch whose events of its source do not follow
// the last one applied here one seq at a time (issue 24 §2): a gap, a step
// back or a jump ahead. Nothing of the batch is applied. Expected is the id
// of the event this node needs next from Source; the sender resends from
// there.
type SequenceError struct {
	Source   int
	Expected int64
}

func (e *SequenceError) Error() string {
	return fmt.Sprintf("events of node %d out of sequence: event %d is needed next", e.Source, e.Expected)
}

// NextEventID is the id of the event of node that follows id in its
// gap-free sequence (ids are seq × 50 + node): seq 1 after 0.
func NextEventID(id int64, node int) int64 {
	return (id/idStride+1)*idStride + int64(node)
}

// checkSequence checks the events of source in a batch against last, the
// last of its events applied here: they ascend one seq at a time, and the
// first above last is the one after it (those at or below are re-sent and
// skipped). Otherwise it returns the id this node needs next. Events of
// other nodes (this node's own, skipped) are not part of the sequence.
func checkSequence(source int, last int64, events []Event) (expected int64, ok bool) {
	want := NextEventID(last, source)
	next := want
	var prev int64
	for _, ev := range events {
		if ev.Node() != source {
			continue
		}
		if prev != 0 && ev.ID != prev+idStride {
			return want, false // a gap, a repeat or a step back inside the batch
		}
		prev = ev.ID
		if ev.ID <= last {
			continue // applied before: re-sent
		}
		if ev.ID != next {
			return want, false // ahead of the mark
		}
		next += idStride
	}
	return 0, true
}
