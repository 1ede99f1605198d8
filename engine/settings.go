package engine

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"sluice/physical"
)

// setting describes one SET-able key: its default and how to check a value.
type setting struct {
	def      func() string
	validate func(string) (string, error)
	help     string
}

func positiveInt(v string) (string, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return "", fmt.Errorf("expected a positive integer, got %q", v)
	}
	return strconv.Itoa(n), nil
}

func nonNegativeInt(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return "", fmt.Errorf("expected a non-negative integer, got %q", v)
	}
	return strconv.FormatInt(n, 10), nil
}

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

func constant(s string) func() string { return func() string { return s } }

var knownSettings = map[string]setting{
	"execution.target_partitions": {
		def:      constant("0"),
		validate: nonNegativeInt,
		help:     "partitions per scan and repartition; 0 means half the cluster's vcores (the CPU count in process)",
	},
	"execution.batch_size": {
		def:      constant(strconv.Itoa(physical.DefaultBatchSize)),
		validate: positiveInt,
		help:     "target rows per record batch",
	},
	"execution.mode": {
		def:      constant("pipelined"),
		validate: oneOf("blocking", "pipelined"),
		help:     "how the cluster runs a query: stage by stage through shuffle files (blocking) or all stages at once, streaming (pipelined)",
	},
	"scheduler.max_partitions_per_task": {
		def:      constant("4"),
		validate: positiveInt,
		help:     "most partitions one task runs",
	},
	"exchange.queue_batches": {
		def:      constant("8"),
		validate: positiveInt,
		help:     "capacity, in batches, of each pipelined exchange queue",
	},
	"optimizer.broadcast_join_threshold_bytes": {
		def:      constant("33554432"),
		validate: nonNegativeInt,
		help:     "a join's build side smaller than this is broadcast (collected whole) instead of repartitioned",
	},
	"execution.memory_limit": {
		def:      constant("0"),
		validate: nonNegativeInt,
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
