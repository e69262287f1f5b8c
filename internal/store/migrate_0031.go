package store

import "gorm.io/gorm"

// migration0031 adds account_codes: the one live verification code or
// password reset token per (purpose, email), kept as a hash (issue 31). It
// is not replicated: a code is used on the database it was mailed from.
func migration0031(db *gorm.DB) error {
	return db.AutoMigrate(&AccountCode{})
}
