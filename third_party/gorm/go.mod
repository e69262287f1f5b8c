module gorm.io/gorm

go 1.18

require (
	github.com/jinzhu/inflection v1.0.0
	github.com/jinzhu/now v1.1.5
	golang.org/x/text v0.20.0
)

require (
	github.com/mattn/go-sqlite3 v1.14.22 // indirect
	gorm.io/driver/sqlite v1.6.0 // indirect
)
