package engine

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"sluice/physical"
)

// setting describes one SET-able key: its default and how to check a value.
type setting struct {
	def      func() string
	validate func(string) (string, error)
	help     string
}

// intRange returns a validator for integers in [lo, hi]. Every integer
// setting has an upper bound: a value sent by any client sizes buffers in
// every executor, so an absurd one (a 2^31-row batch) must be refused here
// rather than discovered as an allocation that takes an executor down.
// zeroMeans, when non-empty, documents that 0 is also accepted (an "auto"
// value) even though lo is above it.
func intRange(lo, hi int64, zeroMeans string) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err == nil && (n >= lo && n <= hi || n == 0 && zeroMeans != "") {
			return strconv.FormatInt(n, 10), nil
		}
		if zeroMeans != "" {
			return "", fmt.Errorf("expected 0 (%s) or an integer from %d to %d, got %q", zeroMeans, lo, hi, v)
		}
		return "", fmt.Errorf("expected an integer from %d to %d, got %q", lo, hi, v)
	}
}

// byteSize is intRange for a byte-valued setting that also takes a size
// with a unit, as DuckDB's and DataFusion's memory limits do: '512MiB',
// '1.5 GB', '2G'. KB, MB, GB and TB are powers of 1000; KiB, MiB, GiB and
// TiB, and DataFusion's K, M, G and T, are powers of 1024. The value is
// stored as the integer number of bytes.
func byteSize(lo, hi int64) func(string) (string, error) {
	ints := intRange(lo, hi, "")
	return func(v string) (string, error) {
		if out, err := ints(v); err == nil {
			return out, nil
		}
		n, ok := parseByteSize(v)
		if ok && n >= lo && n <= hi {
			return strconv.FormatInt(n, 10), nil
		}
		return "", fmt.Errorf("expected a number of bytes from %d to %d, or a size such as '512MiB', '1.5GB' or '2G', got %q", lo, hi, v)
	}
}

// byteUnits maps a unit, lower-cased, to its bytes.
var byteUnits = map[string]float64{
	"b":  1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
}

// parseByteSize reads a non-negative number followed by a unit of
// byteUnits (spaces allowed between them), rounded to whole bytes.
func parseByteSize(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	i := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i <= 0 {
		return 0, false
	}
	unit, ok := byteUnits[strings.ToLower(strings.TrimSpace(v[i:]))]
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(v[:i], 64)
	if err != nil || f < 0 || f*unit > float64(MaxBytesSetting) {
		return 0, false
	}
	return int64(f*unit + 0.5), true
}

// Bounds of the integer settings, documented in docs/operations.md.
const (
	// MaxBatchSize is the most rows per record batch: 1 Mi rows of a few
	// wide columns is already hundreds of MiB per batch in each operator.
	MaxBatchSize = 1 << 20
	// MaxTargetPartitions is the most partitions per scan and exchange; a
	// pipelined query needs one vcore per partition of its widest stage.
	MaxTargetPartitions = 1024
	// MaxPartitionsPerTask bounds scheduler.max_partitions_per_task.
	MaxPartitionsPerTask = 1024
	// MaxQueueBatches bounds exchange.queue_batches: each pipelined stream
	// buffers up to this many batches.
	MaxQueueBatches = 1024
	// MaxBytesSetting bounds the byte-valued settings (1 PiB).
	MaxBytesSetting = 1 << 50
	// MaxQueryRetries bounds execution.query_retries: each retry runs the
	// whole query again.
	MaxQueryRetries = 5
	// DefaultAQETargetPartitionBytes is
	// execution.aqe_target_partition_bytes' default (see
	// docs/architecture.md, adaptive execution).
	DefaultAQETargetPartitionBytes = 8 << 20
	// DefaultAutoMaxPipelinedRows is execution.auto_max_pipelined_rows'
	// default (see docs/architecture.md, auto mode, for how it was chosen).
	DefaultAutoMaxPipelinedRows = 10_000_000
	// DefaultBlockingInlineBuildBytes is
	// execution.blocking_inline_build_bytes' default (see
	// docs/architecture.md, blocking mode).
	DefaultBlockingInlineBuildBytes = 8 << 20
)

func oneOf(opts ...string) func(string) (string, error) {
	return func(v string) (string, error) {
		l := strings.ToLower(v)
		for _, o := range opts {
			if l == o {
				return l, nil
			}
		}
		return "", fmt.Errorf("expected one of %s, got %q", strings.Join(opts, ", "), v)
	}
}

// boolean accepts on/off, true/false, yes/no and 1/0, stored as on or off.
func boolean(v string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "on", "true", "yes", "1":
		return "on", nil
	case "off", "false", "no", "0":
		return "off", nil
	}
	return "", fmt.Errorf("expected on or off, got %q", v)
}

func constant(s string) func() string { return func() string { return s } }

// duration accepts a Go duration ("30s", "5m") from 0 to max, or a bare 0.
func duration(max time.Duration) func(string) (string, error) {
	return func(v string) (string, error) {
		v = strings.TrimSpace(v)
		if v == "0" {
			return v, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > max {
			return "", fmt.Errorf("expected a duration from 0 to %s such as 30s or 5m, got %q", max, v)
		}
		return d.String(), nil
	}
}

var knownSettings = map[string]setting{
	"execution.target_partitions": {
		def:      constant("0"),
		validate: intRange(1, MaxTargetPartitions, "auto"),
		help:     "partitions per scan and repartition; 0 means half the cluster's vcores (the CPU count in process)",
	},
	"execution.batch_size": {
		def:      constant(strconv.Itoa(physical.DefaultBatchSize)),
		validate: intRange(1, MaxBatchSize, ""),
		help:     "target rows per record batch",
	},
	"execution.mode": {
		def:      constant("pipelined"),
		validate: oneOf("blocking", "pipelined", "auto"),
		help:     "how the cluster runs a query: stage by stage through shuffle files (blocking), all stages at once, streaming (pipelined), or pipelined when it fits the free vcores now and its estimated intermediates are small, else blocking (auto)",
	},
	"execution.query_retries": {
		def:      constant("1"),
		validate: intRange(0, MaxQueryRetries, ""),
		help:     "how often a pipelined query that lost an executor before any row reached the client is run again from the start",
	},
	"execution.auto_max_pipelined_rows": {
		def:      constant(strconv.Itoa(DefaultAutoMaxPipelinedRows)),
		validate: intRange(0, MaxBytesSetting, ""),
		help:     "auto mode runs a query blocking when its largest estimated intermediate result (join input, grouped output, sort input) has more rows than this",
	},
	"execution.adaptive": {
		def:      constant("on"),
		validate: boolean,
		help:     "blocking mode re-plans a stage from the exact sizes of its finished inputs: coalesces small shuffle partitions and broadcasts a join's build side that turned out small (pipelined mode is never adaptive)",
	},
	"execution.aqe_target_partition_bytes": {
		def:      constant(strconv.Itoa(DefaultAQETargetPartitionBytes)),
		validate: byteSize(0, MaxBytesSetting),
		help:     "adaptive execution merges a blocking stage's consecutive shuffle partitions into one task partition up to this many bytes (0: never)",
	},
	"scheduler.max_partitions_per_task": {
		def:      constant("4"),
		validate: intRange(1, MaxPartitionsPerTask, ""),
		help:     "most partitions one task runs",
	},
	"exchange.queue_batches": {
		def:      constant("8"),
		validate: intRange(1, MaxQueueBatches, ""),
		help:     "capacity, in batches, of each pipelined exchange queue",
	},
	"exchange.multiplex": {
		def:      constant("off"),
		validate: boolean,
		help:     "pipelined mode: a task reads all its partitions from one producer task on another executor over one Flight stream with per-partition credit (on), or over a stream per partition (off)",
	},
	"execution.lazy_producers": {
		def:      constant("false"),
		validate: oneOf("false", "true"),
		help:     "pipelined mode: a task starts its work when a consumer first reads one of its queues (true), or as soon as it is launched (false)",
	},
	"optimizer.broadcast_join_threshold_bytes": {
		def:      constant("33554432"),
		validate: byteSize(0, MaxBytesSetting),
		help:     "a join's build side smaller than this is broadcast (collected whole) instead of repartitioned",
	},
	"scheduler.queue_timeout": {
		def:      constant("5m"),
		validate: duration(24 * time.Hour),
		help:     "longest a job waits for free vcores before it fails saying why (0: for ever); e.g. 30s, 5m",
	},
	"execution.idle_client_timeout": {
		def:      constant("1m"),
		validate: duration(24 * time.Hour),
		help:     "a pipelined query whose client reads none of its result for this long is cancelled, freeing its executors' vcores (0: wait for ever); e.g. 30s, 5m",
	},
	"execution.blocking_inline_build_bytes": {
		def:      constant(strconv.Itoa(DefaultBlockingInlineBuildBytes)),
		validate: byteSize(0, MaxBytesSetting),
		help:     "blocking mode: a broadcast join's build side that only reads files and is estimated at most this many bytes is read by each task of the join's stage itself, not by a stage of its own that must finish first (0: never)",
	},
	"execution.blocking_swap_max_ratio": {
		def:      constant("8"),
		validate: intRange(0, 1_000_000, ""),
		help:     "blocking mode: an inner join that builds on other joins' rows and probes a scan that execution.blocking_inline_build_bytes would keep in the stage is turned around to build on the scan, when the scan's estimated rows are at most this many times the other side's (0: never)",
	},
	"execution.dynamic_filters": {
		def:      constant("on"),
		validate: oneOf("on", "off"),
		help:     "on a cluster, a join whose probe side crosses an exchange has its build side's keys filter the probe side's scan in the other stage (off: never)",
	},
	"catalog.warehouse": {
		def:      constant(""),
		validate: validWarehouse,
		help:     "absolute directory under which CREATE TABLE without LOCATION keeps a managed table's files (empty: the shell's temporary warehouse, removed when it exits, or the scheduler's --warehouse)",
	},
	"execution.memory_limit": {
		def:      constant("0"),
		validate: byteSize(0, MaxBytesSetting),
		help:     "bytes a query's operators may reserve (0: no limit)",
	},
}

// Settings are a session's SET values. The zero value is not usable; use
// NewSettings.
type Settings struct {
	values map[string]string
	// defaults are the session's own defaults where they differ from the
	// built-in ones (a --mode flag): what RESET goes back to.
	defaults map[string]string
}

// defaultPrefix marks a session default in Map's output, so that the
// defaults travel to a scheduler with the values and RESET works there.
const defaultPrefix = "default:"

// NewSettings returns the defaults.
func NewSettings() *Settings {
	s := &Settings{values: map[string]string{}}
	for k, d := range knownSettings {
		s.values[k] = d.def()
	}
	return s
}

// Set validates and stores a value.
func (s *Settings) Set(key, value string) error {
	key = strings.ToLower(key)
	d, ok := knownSettings[key]
	if !ok {
		return fmt.Errorf("unknown setting %q (SHOW ALL lists the settings)", key)
	}
	v, err := d.validate(strings.Trim(value, "'\""))
	if err != nil {
		return fmt.Errorf("invalid value for %s: %w", key, err)
	}
	s.values[key] = v
	return nil
}

// SetDefault sets a value and makes it the one RESET restores (the
// session's starting value, as a connection parameter is in PostgreSQL).
func (s *Settings) SetDefault(key, value string) error {
	if err := s.Set(key, value); err != nil {
		return err
	}
	key = strings.ToLower(key)
	if s.defaults == nil {
		s.defaults = map[string]string{}
	}
	s.defaults[key] = s.values[key]
	return nil
}

// Reset restores key, or every setting for "all", to the session default.
func (s *Settings) Reset(key string) error {
	key = strings.ToLower(key)
	if key == "all" {
		for k, d := range knownSettings {
			s.values[k] = d.def()
		}
		for k, v := range s.defaults {
			s.values[k] = v
		}
		return nil
	}
	d, ok := knownSettings[key]
	if !ok {
		return fmt.Errorf("unknown setting %q (SHOW ALL lists the settings)", key)
	}
	s.values[key] = d.def()
	if v, ok := s.defaults[key]; ok {
		s.values[key] = v
	}
	return nil
}

// Get returns a value; ok is false for unknown keys.
func (s *Settings) Get(key string) (string, bool) {
	v, ok := s.values[strings.ToLower(key)]
	return v, ok
}

// Bool returns a setting known to be on or off.
func (s *Settings) Bool(key string) bool {
	v, _ := s.Get(key)
	return v == "on"
}

// Int returns a setting known to be an integer.
func (s *Settings) Int(key string) int64 {
	v, _ := s.Get(key)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// Keys returns every setting name, sorted.
func (s *Settings) Keys() []string {
	out := make([]string, 0, len(s.values))
	for k := range s.values {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Map returns a copy of every value, for sending to a scheduler, with the
// session defaults under keys prefixed "default:".
func (s *Settings) Map() map[string]string {
	out := make(map[string]string, len(s.values)+len(s.defaults))
	for k, v := range s.values {
		out[k] = v
	}
	for k, v := range s.defaults {
		out[defaultPrefix+k] = v
	}
	return out
}

// SettingsFromMap returns the defaults overridden by m, validating each.
func SettingsFromMap(m map[string]string) (*Settings, error) {
	s := NewSettings()
	for k, v := range m {
		if strings.HasPrefix(k, defaultPrefix) {
			continue
		}
		if err := s.Set(k, v); err != nil {
			return nil, err
		}
	}
	for k, v := range m {
		if name, ok := strings.CutPrefix(k, defaultPrefix); ok {
			if _, known := knownSettings[name]; !known {
				return nil, fmt.Errorf("unknown setting %q (SHOW ALL lists the settings)", name)
			}
			if s.defaults == nil {
				s.defaults = map[string]string{}
			}
			if s.defaults[name], ok = validated(name, v); !ok {
				return nil, fmt.Errorf("invalid default for %s: %q", name, v)
			}
		}
	}
	return s, nil
}

func validated(key, v string) (string, bool) {
	out, err := knownSettings[key].validate(v)
	return out, err == nil
}
