package plan

import (
	"strings"
	"testing"
)

func TestParseDate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int32 // days since the epoch
		err  string
	}{
		{in: "1970-01-01", want: 0},
		{in: "1999-2-01", want: 10623},
		{in: "1999-02-1", want: 10623},
		{in: " 1999-2-1 ", want: 10623},
		{in: "2000-02-29", want: 11016},
		{in: "1969-12-31", want: -1},
		{in: "2000-01-01 12:30:00", want: 10957},
		{in: "2000-01-01T23:59:59.999", want: 10957},
		{in: "2001-02-29", err: "out of range"},
		{in: "2000-13-01", err: "out of range"},
		{in: "2000-00-10", err: "out of range"},
		{in: "99-01-01", err: "expected YYYY-MM-DD"},
		{in: "2000-001-01", err: "expected YYYY-MM-DD"},
		{in: "2000/01/01", err: "expected YYYY-MM-DD"},
		{in: "2000-01-01x", err: "expected YYYY-MM-DD"},
		{in: "2000-01-01 garbage", err: "expected YYYY-MM-DD"},
		{in: "", err: "expected YYYY-MM-DD"},
		{in: "hello", err: "expected YYYY-MM-DD"},
	} {
		got, err := ParseDate(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseDate(%q) = %d, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseDate(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	const day = MicrosPerDay
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{in: "1970-01-01", want: 0},
		{in: "1970-01-02 00:00:01", want: day + 1e6},
		{in: "2000-1-2 3:04:05", want: 10958*day + (3*3600+4*60+5)*1e6},
		{in: "1970-01-01T01:02", want: (3600 + 120) * 1e6},
		{in: "1970-01-01 00:00:00.5", want: 500000},
		{in: "1970-01-01 00:00:00.1234567", want: 123457},
		{in: "1970-01-01 24:00:00", want: day},
		{in: "1969-12-31 23:59:59", want: -1e6},
		{in: "1970-01-01 25:00:00", err: "out of range"},
		{in: "1970-01-01 10:60", err: "out of range"},
		{in: "1970-01-01 10:5", err: "expected YYYY-MM-DD HH:MM:SS"},
		{in: "1970-01-01 10", err: "expected YYYY-MM-DD HH:MM:SS"},
		{in: "1970-01-01 10:00:00.", err: "expected YYYY-MM-DD HH:MM:SS"},
		{in: "1970-01-01 10:00:00 pm", err: "expected YYYY-MM-DD HH:MM:SS"},
		{in: "yesterday", err: "expected YYYY-MM-DD HH:MM:SS"},
	} {
		got, err := ParseTimestamp(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseTimestamp(%q) = %d, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseTimestamp(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParseTimestampUTCDesignator(t *testing.T) {
	want, err := ParseTimestamp("2024-01-01 10:00:00")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"2024-01-01T10:00:00Z", "2024-01-01T10:00:00z", "2024-01-01 10:00:00+00", "2024-01-01 10:00:00+00:00",
		"2024-01-01 10:00:00+0000", "2024-01-01 10:00:00-00", "2024-01-01 10:00:00 UTC", " 2024-01-01T10:00:00Z "} {
		got, err := ParseTimestamp(s)
		if err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"2024-01-01T10:00:00+02:00", "2024-01-01T10:00:00-05", "2024-01-01Z", "2024-01-01T10:00:00ZZ"} {
		if _, err := ParseTimestamp(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}
