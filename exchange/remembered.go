package exchange

import "time"

// Remembered is a set of keys (removed jobs) each kept for at least ttl
// after it was added. Adding sweeps out the keys older than ttl, but at
// most once every ttl/16: an executor used to walk every job it had
// removed in the last hour on each removal, three times over (its own
// record, the registry's and the job secrets'), which made removing a job
// cost time in proportion to the jobs run in the hour before (3,000
// SELECT 1 in one shell: 13 % of the CPU). A key may so stay up to
// ttl/16 longer; nothing relies on it leaving sooner. Not safe for
// concurrent use: its owner's lock guards it.
type Remembered struct {
	ttl   time.Duration
	at    map[string]time.Time
	swept time.Time
}

// NewRemembered returns an empty set keeping keys for ttl.
func NewRemembered(ttl time.Duration) *Remembered {
	return &Remembered{ttl: ttl, at: map[string]time.Time{}}
}

// Add remembers key from now on.
func (r *Remembered) Add(key string, now time.Time) {
	if now.Sub(r.swept) >= r.ttl/16 {
		for k, at := range r.at {
			if now.Sub(at) > r.ttl {
				delete(r.at, k)
			}
		}
		r.swept = now
	}
	r.at[key] = now
}

// Has reports whether key is remembered.
func (r *Remembered) Has(key string) bool {
	_, ok := r.at[key]
	return ok
}

// Len is how many keys are remembered.
func (r *Remembered) Len() int { return len(r.at) }
