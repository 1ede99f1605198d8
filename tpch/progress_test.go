package tpch

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgressBar(t *testing.T) {
	tests := []struct {
		name  string
		calls [][3]any // label, done, total
		want  []string // substrings, in order
		lines int      // newlines printed
	}{
		{
			name:  "one step",
			calls: [][3]any{{"nation", int64(0), int64(25)}, {"nation", int64(25), int64(25)}},
			want:  []string{"\rnation", "  0% 0/25", "\rnation", "[##############################] 100% 25/25", "\n"},
			lines: 1,
		},
		{
			name: "unchanged redraw skipped",
			calls: [][3]any{
				{"orders+lineitem", int64(1000), int64(1500000)},
				{"orders+lineitem", int64(2000), int64(1500000)},
				{"orders+lineitem", int64(750000), int64(1500000)},
			},
			want:  []string{"0% 1000/1500000", "[###############...............]  50% 750000/1500000"},
			lines: 0,
		},
		{
			name:  "zero total is complete",
			calls: [][3]any{{"x", int64(0), int64(0)}},
			want:  []string{"100% 0/0"},
			lines: 0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			bar := NewProgressBar(&buf)
			for _, c := range tc.calls {
				bar(c[0].(string), c[1].(int64), c[2].(int64))
			}
			out := buf.String()
			rest := out
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output %q lacks %q (in order)", out, w)
				}
				rest = rest[i+len(w):]
			}
			if got := strings.Count(out, "\n"); got != tc.lines {
				t.Fatalf("%d newlines in %q, want %d", got, out, tc.lines)
			}
			if strings.Contains(out, "2000/") {
				t.Fatalf("redrew an unchanged bar: %q", out)
			}
		})
	}
}
