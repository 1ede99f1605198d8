// Package bench measures sluice on TPC-H: each query in each execution mode
// (and DuckDB as a peer), with time to first row and total time per run,
// round-trip latency and memory, and writes the runs as JSON, a text table
// and an SVG chart. Beside the 22 TPC-H queries, which all end in a sort or
// a global aggregate (their first row is their last), a set of streaming
// queries over the same tables shows when rows reach the client.
package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"
)

// The query sets: TPC-H's 22 queries (q1 ... q22; runs recorded before
// sets existed have no set and are TPC-H's), the streaming queries (s1
// ...), whose results do not end in a sort or an aggregate, and TPC-DS's
// 99 queries (q1 ... q99, in a report of their own).
const (
	SetTPCH      = ""
	SetStreaming = "streaming"
	SetTPCDS     = "tpcds"
)

// Label names query n of set: q6, s2.
func Label(set string, n int) string {
	if set == SetStreaming {
		return fmt.Sprintf("s%d", n)
	}
	return fmt.Sprintf("q%d", n)
}

// Run is one timed execution of one query.
type Run struct {
	Set     string  `json:"set,omitempty"`
	Query   int     `json:"query"`
	Mode    string  `json:"mode"`
	Run     int     `json:"run"`
	TTFRMs  float64 `json:"ttfr_ms"`
	TotalMs float64 `json:"total_ms"`
	Rows    int64   `json:"rows"`
	// CPUMs is the CPU time (user and system) this whole process used
	// during the run: the query's work in every goroutine, the cluster's
	// included, and whatever else the process did meanwhile. On a machine
	// whose cores are all busy it tells a mode's extra work from its
	// waiting. 0: not measured (a peer's report).
	CPUMs float64 `json:"cpu_ms,omitempty"`
	// PageFaults and GCCycles are the page faults and the garbage
	// collector's cycles of this whole process during the run. Runs of
	// one query in one mode that differ in time often differ here: a run
	// that maps fresh memory pays for each page. 0 in a peer's report.
	PageFaults int64  `json:"page_faults,omitempty"`
	GCCycles   uint64 `json:"gc_cycles,omitempty"`
}

// Skip is a query left out of one mode because its warm-up run failed,
// such as SQL the mode does not take.
type Skip struct {
	Set   string `json:"set,omitempty"`
	Query int    `json:"query"`
	Mode  string `json:"mode"`
	Error string `json:"error"`
}

// Machine describes where a report was measured.
type Machine struct {
	CPUs      int    `json:"cpus"`
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	GoVersion string `json:"go_version"`
	Date      string `json:"date"`
	// Host is free text, such as the CPU model (from /proc/cpuinfo).
	Host string `json:"host,omitempty"`
}

// Latency is a round-trip microbenchmark of one statement in one mode.
type Latency struct {
	Name  string  `json:"name"`
	Mode  string  `json:"mode"`
	Count int     `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// Memory is what one mode's suite (or, interleaved, its runs) cost in
// memory, and how busy the machine was meanwhile.
type Memory struct {
	Mode string `json:"mode"`
	// PeakRSSBytes is the process's resident high-water mark (VmHWM) when
	// the mode's suite ended. It is process-wide and never goes down, so
	// modes run later include the earlier modes' peak.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// PeakQueuedBytes is the most bytes the executors' pipelined exchange
	// queues held at once during the mode's suite or runs (summed over
	// executors).
	PeakQueuedBytes int64 `json:"peak_queued_bytes"`
	// PeakReservedBytes is, per executor, the most bytes its memory pool
	// had reserved at once during the mode's suite or runs: what operators
	// accounted (hash tables, sorts, buffered batches), not the heap.
	PeakReservedBytes []int64 `json:"peak_reserved_bytes,omitempty"`
	// OtherCPUs is how many CPUs other processes kept busy, on average,
	// while the mode's suite or runs ran (0: none, or not known). Times
	// measured while other work ran are not comparable with an idle
	// machine's.
	OtherCPUs float64 `json:"other_cpus,omitempty"`
}

// Report is everything one benchmark run measured.
type Report struct {
	Suite      string    `json:"suite"`
	ScaleFact  int       `json:"scale_factor"`
	Executors  int       `json:"executors,omitempty"`
	Machine    Machine   `json:"machine"`
	Runs       []Run     `json:"runs"`
	Latency    []Latency `json:"latency,omitempty"`
	Memory     []Memory  `json:"memory,omitempty"`
	Notes      []string  `json:"notes,omitempty"`
	ModesOrder []string  `json:"modes"`
	Skipped    []Skip    `json:"skipped,omitempty"`
	// Answers names where the answers Checks compared with came from.
	Answers string  `json:"answers,omitempty"`
	Checks  []Check `json:"checks,omitempty"`
}

// ThisMachine describes the machine this process runs on.
func ThisMachine() Machine {
	return Machine{
		CPUs: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		GoVersion: runtime.Version(), Date: time.Now().UTC().Format(time.RFC3339), Host: cpuModel(),
	}
}

// WriteJSON writes r to path, indented.
func WriteJSON(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding benchmark report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing benchmark report: %w", err)
	}
	return nil
}

// ReadJSON reads a report written by WriteJSON (or the DuckDB peer).
func ReadJSON(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading benchmark report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("reading benchmark report %s: %w", path, err)
	}
	return &r, nil
}

// Merge adds other's runs (and modes) to r, for a peer such as DuckDB
// measured by a separate program on the same data. Runs, latencies and
// memory r already holds for other's modes are replaced, so that merging
// a peer into a report it was merged into before does not count it twice.
func (r *Report) Merge(other *Report) {
	theirs := other.Modes()
	r.Runs = slices.DeleteFunc(r.Runs, func(x Run) bool { return contains(theirs, x.Mode) })
	r.Latency = slices.DeleteFunc(r.Latency, func(x Latency) bool { return contains(theirs, x.Mode) })
	r.Memory = slices.DeleteFunc(r.Memory, func(x Memory) bool { return contains(theirs, x.Mode) })
	r.Skipped = slices.DeleteFunc(r.Skipped, func(x Skip) bool { return contains(theirs, x.Mode) })
	for _, n := range other.Notes {
		r.Notes = slices.DeleteFunc(r.Notes, func(x string) bool { return x == n })
	}
	r.Runs = append(r.Runs, other.Runs...)
	for _, m := range other.Modes() {
		if !contains(r.ModesOrder, m) {
			r.ModesOrder = append(r.ModesOrder, m)
		}
	}
	r.Latency = append(r.Latency, other.Latency...)
	r.Memory = append(r.Memory, other.Memory...)
	r.Skipped = append(r.Skipped, other.Skipped...)
	r.Notes = append(r.Notes, other.Notes...)
}

// Modes lists the report's modes in the order they ran.
func (r *Report) Modes() []string {
	out := append([]string(nil), r.ModesOrder...)
	for _, run := range r.Runs {
		if !contains(out, run.Mode) {
			out = append(out, run.Mode)
		}
	}
	return out
}

// Queries lists the queries of set measured, ascending.
func (r *Report) Queries(set string) []int {
	seen := map[int]bool{}
	var out []int
	for _, run := range r.Runs {
		if run.Set == set && !seen[run.Query] {
			seen[run.Query] = true
			out = append(out, run.Query)
		}
	}
	sortInts(out)
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
