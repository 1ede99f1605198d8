package tpch

import (
	"fmt"
	"io"
	"strings"
)

// NewProgressBar returns a Generate progress callback that redraws a single
// terminal line on w (using a carriage return) as generation advances. It
// prints a newline when a step finishes. It does not check whether w is a
// terminal: the caller decides that.
func NewProgressBar(w io.Writer) func(table string, done, total int64) {
	const width = 30
	lastLabel, lastFill, lastPct := "", -1, -1
	return func(table string, done, total int64) {
		pct := 100
		if total > 0 {
			pct = int(done * 100 / total)
		}
		pct = min(max(pct, 0), 100)
		fill := pct * width / 100
		if table == lastLabel && fill == lastFill && pct == lastPct {
			return // nothing visible changed; spare the terminal
		}
		lastLabel, lastFill, lastPct = table, fill, pct
		bar := strings.Repeat("#", fill) + strings.Repeat(".", width-fill)
		fmt.Fprintf(w, "\r%-16s [%s] %3d%% %d/%d\x1b[K", table, bar, pct, done, total)
		if total > 0 && done >= total {
			fmt.Fprint(w, "\n")
		}
	}
}
