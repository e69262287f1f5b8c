package store

import "context"

// ChannelState is a channel's name and status, for metrics.
type ChannelState struct {
	ID     int64
	Name   string
	Status int
}

// ChannelStates lists every channel's status (a scrape of /metrics reads
// it: one small query over the channel table, never on a call's path).
func (s *Store) ChannelStates(ctx context.Context) ([]ChannelState, error) {
	var rows []ChannelState
	err := s.read(ctx).Model(&Channel{}).Select("id", "name", "status").Order("id").Scan(&rows).Error
	return rows, wrap("list channel states", err)
}
