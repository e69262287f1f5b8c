package importer

import (
	"fmt"
	"io"
)

// Report is what an import did (or, dry, would do): counts per table, each
// row left out with its reason, each value clamped, and what came over
// changed.
type Report struct {
	System  string
	DryRun  bool
	Counts  []Count
	Skipped []Note // rows not imported
	Clamped []Note // values beyond modelgate's limits, set to the limit
	Changed []Note // rows imported with a change (disabled, demoted, field dropped)
}

// Count is the rows of one kind read and imported.
type Count struct {
	What           string
	Read, Imported int
}

// Note is one row's remark.
type Note struct {
	Table  string
	ID     string
	Reason string
}

func (r *Report) count(what string, read, imported int) {
	r.Counts = append(r.Counts, Count{What: what, Read: read, Imported: imported})
}

func (r *Report) skip(table string, id any, format string, a ...any) {
	r.Skipped = append(r.Skipped, Note{table, fmt.Sprint(id), fmt.Sprintf(format, a...)})
}

func (r *Report) clamp(table string, id any, format string, a ...any) {
	r.Clamped = append(r.Clamped, Note{table, fmt.Sprint(id), fmt.Sprintf(format, a...)})
}

func (r *Report) change(table string, id any, format string, a ...any) {
	r.Changed = append(r.Changed, Note{table, fmt.Sprint(id), fmt.Sprintf(format, a...)})
}

// Write prints the report as plain text.
func (r *Report) Write(w io.Writer) {
	mode := "imported"
	if r.DryRun {
		mode = "would import (dry run, nothing written)"
	}
	fmt.Fprintf(w, "import from %s: %s\n", r.System, mode)
	for _, c := range r.Counts {
		fmt.Fprintf(w, "  %-14s %d of %d\n", c.What, c.Imported, c.Read)
	}
	section := func(title string, notes []Note) {
		if len(notes) == 0 {
			return
		}
		fmt.Fprintf(w, "%s (%d):\n", title, len(notes))
		for _, n := range notes {
			fmt.Fprintf(w, "  %s %s: %s\n", n.Table, n.ID, n.Reason)
		}
	}
	section("skipped", r.Skipped)
	section("clamped to modelgate's limits", r.Clamped)
	section("imported with changes", r.Changed)
}
