package logtext_test

import (
	"testing"

	"github.com/modelgate/modelgate/internal/logtext"
	"github.com/modelgate/modelgate/internal/msgtext"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/store"
)

// TestStoreTypes pins the row types logtext repeats (it sits below store):
// a consume row and an error row render as such.
func TestStoreTypes(t *testing.T) {
	consume := "按次 1 元, 分组倍率 1"
	if got := logtext.Render(msgtext.English, store.LogConsume, consume); got != "per request ¥1, group ratio 1" {
		t.Errorf("consume row: %q", got)
	}
	if got := logtext.Render(msgtext.English, store.LogError, "用户不存在"); got != "user not found" {
		t.Errorf("error row: %q", got)
	}
}

// TestQuotaPerUnit pins the CNY unit logtext repeats: one unit of
// pricing's quota reads ¥1.00.
func TestQuotaPerUnit(t *testing.T) {
	if got := logtext.Money(msgtext.English, pricing.QuotaPerUnit); got != "¥1.00" {
		t.Errorf("Money(pricing.QuotaPerUnit) = %q", got)
	}
}
