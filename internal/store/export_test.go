package store

// ExecForTest runs a raw statement: tests use it to plant rows the API can
// no longer write.
func ExecForTest(s *Store, sql string, args ...any) error {
	return s.db.Exec(sql, args...).Error
}
