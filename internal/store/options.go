package store

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm/clause"
)

// OptionValues returns every stored runtime setting by key.
func (s *Store) OptionValues(ctx context.Context) (map[string]string, error) {
	var opts []Option
	if err := s.read(ctx).Find(&opts).Error; err != nil {
		return nil, wrap("list options", err)
	}
	m := make(map[string]string, len(opts))
	for _, o := range opts {
		m[o.Key] = o.Value
	}
	return m, nil
}

// SetOptions upserts the given key/value pairs in one transaction.
func (s *Store) SetOptions(ctx context.Context, values map[string]string) error {
	now := time.Now().Unix()
	return s.write(ctx, "set options", func(tx *Tx) error {
		for k, v := range values {
			err := tx.db.Clauses(clause.OnConflict{
				Columns:   []clause.Column{{Name: "option_key"}},
				DoUpdates: clause.AssignmentColumns([]string{"value", "updated_at"}),
			}).Create(&Option{Key: k, Value: v, UpdatedAt: now}).Error
			if err != nil {
				return err
			}
			if err := tx.changedKey("options", "UPDATE", k); err != nil {
				return err
			}
		}
		return nil
	})
}

// OptionValue returns one stored setting; ok is false when it was never
// stored. Settings outside the option registry (payment channels) are read
// this way, straight from the table, so a change is seen at once.
func (s *Store) OptionValue(ctx context.Context, key string) (value string, ok bool, err error) {
	var o Option
	err = s.read(ctx).Where("option_key = ?", key).Take(&o).Error
	if err = wrap("get option", err); errors.Is(err, ErrNotFound) {
		return "", false, nil
	}
	return o.Value, err == nil, err
}
