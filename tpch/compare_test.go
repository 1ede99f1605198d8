package tpch

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"strings"
	"testing"
)

const answersDir = "../testdata/tpch/answers-sf1"

func answerFile(t *testing.T, q int) []byte {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("%s/q%d.out", answersDir, q))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// csvFromAnswer turns an official answer into the CSV an engine would print:
// padding removed, comma separated, quoted where needed.
func csvFromAnswer(t *testing.T, q int, edit func(rows [][]string) [][]string) []byte {
	t.Helper()
	rows, err := readAnswer(bytes.NewReader(answerFile(t, q)))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		for j := range r {
			r[j] = strings.TrimRight(r[j], " ")
			if _, err := parseNumber(r[j]); err == nil {
				r[j] = strings.TrimSpace(r[j])
			}
		}
	}
	if edit != nil {
		rows = edit(rows)
	}
	header := make([]string, len(strings.Fields(columnKinds[q])))
	for i := range header {
		header[i] = fmt.Sprintf("c%d", i)
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(header); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteAll(rows); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func set(row, col int, v string) func([][]string) [][]string {
	return func(rows [][]string) [][]string {
		rows[row][col] = v
		return rows
	}
}

func TestCompareAnswerEveryQueryExact(t *testing.T) {
	for q := 1; q <= 22; q++ {
		t.Run(fmt.Sprintf("q%d", q), func(t *testing.T) {
			header, rows, err := ReadCSVResult(bytes.NewReader(csvFromAnswer(t, q, nil)))
			if err != nil {
				t.Fatal(err)
			}
			res, err := CompareAnswer(q, bytes.NewReader(answerFile(t, q)), header, rows)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Pass || !res.Exact {
				t.Fatalf("got %+v, want pass exact", res)
			}
		})
	}
}

func TestCompareAnswer(t *testing.T) {
	tests := []struct {
		name        string
		query       int
		edit        func([][]string) [][]string
		pass, exact bool
		detail      string // substring of Result.Detail
	}{
		{name: "q6 unrounded exact sum", query: 6, edit: set(0, 0, "123141078.2283"), pass: true, exact: true},
		{name: "q1 avg with more digits", query: 1, edit: set(0, 6, "25.5220058532573370"), pass: true, exact: true},
		{name: "q1 float exponent", query: 1, edit: set(0, 3, "5.658655440073e+10"), pass: true, exact: true},
		// 0.045 is 0.04499... as a float64: the kit rounds it to 0.04, 20 % off 0.05.
		{name: "q1 rounds from the binary value as the kit does", query: 1, edit: set(0, 8, "0.045"), pass: false},
		{name: "q1 0.0450001 rounds up", query: 1, edit: set(0, 8, "0.0450001"), pass: true, exact: true},
		{name: "q14 rat within 1", query: 14, edit: set(0, 0, "16.90"), pass: true, exact: false, detail: "row 0 col 0 (rat)"},
		{name: "q1 sum within 100", query: 1, edit: set(1, 5, "1469649300.00"), pass: true, exact: false, detail: "row 1 col 5 (sum)"},
		{name: "q1 avg within 1 percent", query: 1, edit: set(2, 7, "38500.00"), pass: true, exact: false},
		{name: "q3 sum off by cents", query: 3, edit: set(4, 1, "378673.07"), pass: true, exact: false},
		{name: "fail row count", query: 3, edit: func(r [][]string) [][]string { return r[:9] }, detail: "rows: got 9 want 10"},
		{name: "fail extra row", query: 6, edit: func(r [][]string) [][]string { return append(r, []string{"1"}) }, detail: "rows: got 2 want 1"},
		{name: "fail sum beyond 100", query: 1, edit: set(1, 5, "1469649323.20"), detail: "row 1 col 5 (sum)"},
		{name: "fail avg beyond 1 percent", query: 1, edit: set(2, 7, "38700.00"), detail: "row 2 col 7 (avg)"},
		{name: "fail count", query: 1, edit: set(0, 9, "1478494"), detail: "row 0 col 9 (cnt)"},
		{name: "fail fractional int", query: 15, edit: set(0, 0, "8449.5"), detail: "(int)"},
		{name: "fail num not exact", query: 2, edit: set(0, 0, "9938.54"), detail: "row 0 col 0 (num)"},
		{name: "fail string", query: 4, edit: set(0, 0, "1-urgent"), detail: "row 0 col 0 (str)"},
		{name: "fail order", query: 4, edit: func(r [][]string) [][]string { r[0], r[1] = r[1], r[0]; return r }, detail: "row 0 col 0"},
		{name: "fail not a number", query: 6, edit: set(0, 0, "NULL"), detail: "(sum)"},
		{name: "fail missing column", query: 5, edit: set(0, 1, ""), detail: "(sum)"},
		{name: "fail short row", query: 5, edit: func(r [][]string) [][]string { r[2] = r[2][:1]; return r }, detail: "row 2: 1 columns, want 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			header, rows, err := ReadCSVResult(bytes.NewReader(csvFromAnswer(t, tc.query, tc.edit)))
			if err != nil {
				t.Fatal(err)
			}
			res, err := CompareAnswer(tc.query, bytes.NewReader(answerFile(t, tc.query)), header, rows)
			if err != nil {
				t.Fatal(err)
			}
			if res.Pass != tc.pass || res.Exact != tc.exact {
				t.Fatalf("got %+v, want pass=%v exact=%v", res, tc.pass, tc.exact)
			}
			if !strings.Contains(res.Detail, tc.detail) {
				t.Fatalf("detail %q does not contain %q", res.Detail, tc.detail)
			}
		})
	}
}

func TestCompareAnswerHeaderAndErrors(t *testing.T) {
	ans := answerFile(t, 6)
	res, err := CompareAnswer(6, bytes.NewReader(ans), []string{"a", "b"}, [][]string{{"123141078.23"}})
	if err != nil || res.Pass || !strings.Contains(res.Detail, "header has 2 columns") {
		t.Fatalf("wrong header width: got %+v, %v", res, err)
	}
	// A nil header skips the header check.
	res, err = CompareAnswer(6, bytes.NewReader(ans), nil, [][]string{{"123141078.23"}})
	if err != nil || !res.Exact {
		t.Fatalf("nil header: got %+v, %v", res, err)
	}
	for _, q := range []int{0, 23} {
		if _, err := CompareAnswer(q, bytes.NewReader(ans), nil, nil); err == nil {
			t.Fatalf("query %d: want error", q)
		}
	}
	if _, err := CompareAnswer(6, strings.NewReader(""), nil, nil); err == nil {
		t.Fatal("empty answer: want error")
	}
}

func TestReadCSVResult(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		header  []string
		rows    [][]string
		wantErr bool
	}{
		{name: "quoted", in: "a,b\n\"x, y\",2\n", header: []string{"a", "b"}, rows: [][]string{{"x, y", "2"}}},
		{name: "header only", in: "a\n", header: []string{"a"}},
		{name: "crlf and ragged", in: "a,b\r\n1\r\n", header: []string{"a", "b"}, rows: [][]string{{"1"}}},
		{name: "empty", in: "", wantErr: true},
		{name: "bad quote", in: "a\n\"x\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, rows, err := ReadCSVResult(strings.NewReader(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if fmt.Sprint(h) != fmt.Sprint(tc.header) || fmt.Sprint(rows) != fmt.Sprint(tc.rows) {
				t.Fatalf("got %q %q, want %q %q", h, rows, tc.header, tc.rows)
			}
		})
	}
}

func TestRound2(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1.005", "1.00"}, {"-1.005", "-1.00"}, {"1.0051", "1.01"}, {"42698382.855", "42698382.85"}, {"1.004999", "1.00"}, {"2", "2.00"}, {"-0.001", "0.00"}, {"1e-3", "0.00"},
	}
	for _, tc := range tests {
		r, err := parseNumber(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := round2(r).FloatString(2); got != tc.want {
			t.Errorf("round2(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
