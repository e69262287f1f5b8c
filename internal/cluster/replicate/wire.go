// Package replicate moves data changes between cluster nodes: the wire
// form of POST /api/cluster/sync (spec: Cluster sync event) and the push
// worker that sends each peer the events of this node's outbox from that
// peer's cursor (docs/cluster.md, Replication). The outbox, the applying
// of a batch and last-writer-wins live in the store.
package replicate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/cluster"
	"github.com/modelgate/modelgate/internal/cluster/replica"
)

// MaxBatchBytes bounds the body of one sync batch, sent and received:
// 50 events of large rows (a channel with thousands of models, a log with
// a long upstream message) fit; a peer gone wrong cannot fill memory.
const MaxBatchBytes = 16 << 20

// maxSendBytes is where the pusher cuts a batch short of its event count,
// so a batch always fits MaxBatchBytes.
const maxSendBytes = 8 << 20

// Event is a sync event on the wire (spec: Cluster sync event): id,
// table_name, operation, primary_key, data and event_time (seconds) as the
// spec has them, plus what ordering and deltas need: event_time_us (the
// write's time in microseconds: with the node, the row's version), kind
// ("" row, "delta", "bulk") and key (the row's name in tables keyed by
// name: options).
type Event struct {
	ID          int64           `json:"id"`
	TableName   string          `json:"table_name"`
	Operation   string          `json:"operation"`
	PrimaryKey  int64           `json:"primary_key"`
	Data        json.RawMessage `json:"data"`
	EventTime   int64           `json:"event_time"`
	EventTimeUS int64           `json:"event_time_us"`
	Kind        string          `json:"kind,omitempty"`
	Key         string          `json:"key,omitempty"`
}

// Batch is the body of POST /api/cluster/sync.
type Batch struct {
	SourceNodeID int     `json:"source_node_id"`
	Events       []Event `json:"events"`
}

// Answer is the data of a sync's success answer.
type Answer struct {
	Applied int `json:"applied"`
	Skipped int `json:"skipped"`
}

// Messages of a refused batch.
const (
	MsgSourceInvalid = "source_node_id 必须是 1 到 49 之间的整数"
	MsgSourceSelf    = "source_node_id 是本节点的 id"
	MsgEventsMissing = "events 不能为空"
	// MsgTooManyEvents takes the batch limit.
	MsgTooManyEvents = "一批最多 %d 个事件"
	// MsgEventInvalid takes the event's position in the batch.
	MsgEventInvalid = "第 %d 个事件无效"
	// MsgEventForeign takes the event id and the source node.
	MsgEventForeign = "事件 %d 不是节点 %d 产生的"
	// MsgOutOfSequence takes the id of the event this node needs next
	// from the source (the answer's data.expected_id too).
	MsgOutOfSequence = "事件不连续:本节点下一个需要的是事件 %d"
	// MsgEventFuture takes the event id and CLUSTER_MAX_CLOCK_SKEW.
	MsgEventFuture = "事件 %d 的时间超前本节点的时钟超过 %s"
)

// Refused is the data of a sync refused for its order: the event the
// receiver needs next from the source. The pusher resends from it.
type Refused struct {
	ExpectedID int64 `json:"expected_id"`
}

// fromStore is the wire form of an outbox event.
func fromStore(e replica.Event) Event {
	data := json.RawMessage(e.Data)
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	return Event{ID: e.ID, TableName: e.Table, Operation: e.Op, PrimaryKey: e.PK, Data: data,
		EventTime: e.TimeUS / 1_000_000, EventTimeUS: e.TimeUS, Kind: e.Kind, Key: e.Key}
}

// ToStore checks a received event's form and returns it for the store. The
// content (the row's columns, the amounts) is checked where it applies.
func (e Event) ToStore() (replica.Event, error) {
	switch {
	case e.ID <= 0:
		return replica.Event{}, fmt.Errorf("id %d", e.ID)
	case e.TableName == "" || len(e.TableName) > 64 || !utf8.ValidString(e.TableName):
		return replica.Event{}, fmt.Errorf("table_name")
	case e.Operation != "INSERT" && e.Operation != "UPDATE" && e.Operation != "DELETE":
		return replica.Event{}, fmt.Errorf("operation %q", e.Operation)
	case e.Kind != "" && e.Kind != replica.KindDelta && e.Kind != replica.KindBulk:
		return replica.Event{}, fmt.Errorf("kind %q", e.Kind)
	case e.PrimaryKey < 0 || len(e.Key) > 191:
		return replica.Event{}, fmt.Errorf("primary_key or key")
	}
	data := bytes.TrimSpace(e.Data)
	if len(data) > 0 && string(data) != "null" && data[0] != '{' {
		return replica.Event{}, fmt.Errorf("data is not an object")
	}
	t := e.EventTimeUS
	if t == 0 {
		// A peer that sends seconds only: the version keeps the second
		// (a time too large to count in µs is refused, not wrapped).
		if e.EventTime > math.MaxInt64/1_000_000 {
			return replica.Event{}, fmt.Errorf("event_time")
		}
		t = e.EventTime * 1_000_000
	}
	if t <= 0 {
		return replica.Event{}, fmt.Errorf("event_time")
	}
	return replica.Event{ID: e.ID, Table: e.TableName, Op: e.Operation, Kind: e.Kind, PK: e.PrimaryKey, Key: e.Key,
		Data: data, TimeUS: t}, nil
}

// CheckBatch validates a received batch for this node (self) with the
// batch limit limit and returns its events for the store, or the message
// of the refusal and its arguments.
func CheckBatch(b Batch, self, limit int) ([]replica.Event, string, []any) {
	switch {
	case b.SourceNodeID < cluster.MinNodeID || b.SourceNodeID > cluster.MaxNodeID:
		return nil, MsgSourceInvalid, nil
	case b.SourceNodeID == self:
		return nil, MsgSourceSelf, nil
	case b.Events == nil:
		return nil, MsgEventsMissing, nil
	case len(b.Events) > limit:
		return nil, MsgTooManyEvents, []any{limit}
	}
	out := make([]replica.Event, len(b.Events))
	for i, e := range b.Events {
		ev, err := e.ToStore()
		if err != nil {
			return nil, MsgEventInvalid, []any{i + 1}
		}
		if n := ev.Node(); n != b.SourceNodeID && n != self {
			return nil, MsgEventForeign, []any{ev.ID, b.SourceNodeID}
		}
		out[i] = ev
	}
	return out, "", nil
}

// CheckClock refuses a batch holding an event dated more than maxSkew
// (CLUSTER_MAX_CLOCK_SKEW) past now, this node's wall clock, and returns
// the message and its arguments (issue 24 §2). Applied, such an event would
// win every later write of its row for as long as it is in the future, and
// drag this node's hybrid clock along (the store bounds that too).
func CheckClock(events []replica.Event, now time.Time, maxSkew time.Duration) (string, []any) {
	limit := now.Add(maxSkew).UnixMicro()
	for _, ev := range events {
		if ev.TimeUS > limit {
			return MsgEventFuture, []any{ev.ID, maxSkew.String()}
		}
	}
	return "", nil
}
