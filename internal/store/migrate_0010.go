package store

import "gorm.io/gorm"

// migration0010 records the billing lease a plan usage reservation was
// made under, as money reservations do: when a process sharing a server
// database dies, its usage holds come back with its lease (30 s by
// default) instead of after the janitor's two hours. Older holds keep
// lease 0 and the janitor's rule.
func migration0010(db *gorm.DB) error {
	m := db.Migrator()
	if !m.HasColumn(&v10PlanUsageHold{}, "LeaseID") {
		if err := m.AddColumn(&v10PlanUsageHold{}, "LeaseID"); err != nil {
			return err
		}
	}
	if m.HasIndex(&v10PlanUsageHold{}, "idx_plan_usage_hold_lease") {
		return nil
	}
	return m.CreateIndex(&v10PlanUsageHold{}, "idx_plan_usage_hold_lease")
}

// v10PlanUsageHold names the column this step adds.
type v10PlanUsageHold struct {
	LeaseID int64 `gorm:"not null;default:0;index:idx_plan_usage_hold_lease"`
}

func (v10PlanUsageHold) TableName() string { return "plan_usage_holds" }
