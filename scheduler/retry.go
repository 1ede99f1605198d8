package scheduler

import (
	"errors"
	"fmt"
	"time"
)

// retryLocked runs a failed pipelined job again from the start, as a new
// job, when it may: the failure was a lost or unreachable executor (never
// the query's own error), the client has not claimed a row of it
// (j.delivered), and attempts remain (execution.query_retries). The new
// job has a new ID, secret and queue capabilities, so nothing of the
// failed attempt can be read for it; the query is planned again for the
// executors that remain, and the executor blamed is avoided even if it
// is still registered (it is being probed). It reports whether the job
// was dealt with: retried, or failed because the retry could not be
// built. A write (COPY, CREATE TABLE AS, INSERT) is not retried: its
// failure removes its files, and a new attempt would be a second write.
// Callers hold s.mu.
func (s *Scheduler) retryLocked(j *job, err error) bool {
	var lost *LostExecutorError
	if j.spec == nil || j.spec.replan == nil || j.write != nil || j.delivered || j.attempt >= j.attempts || !errors.As(err, &lost) || s.closed || len(s.executors) == 0 {
		return false
	}
	q, perr := j.spec.replan()
	var next *job
	if perr == nil {
		var avoid []string
		if _, ok := s.executors[lost.Executor]; ok {
			avoid = []string{lost.Executor}
		}
		next, perr = s.newJobLocked(newJobKey(j.owner), j.spec, q, j.attempt+1, avoid)
	}
	if perr != nil {
		s.failJobLocked(j, fmt.Errorf("%w; running the query again failed: %v", err, perr))
		return true
	}
	next.attempts = j.attempts
	next.notice = fmt.Sprintf("query retried after executor %s was lost (attempt %d of %d)", lost.Executor, next.attempt, next.attempts)
	// The status stream following j moves on to next once it sees j
	// failed with a successor, so the successor is set first.
	j.retry = next
	s.failJobLocked(j, err)
	s.addJobLocked(next)
	s.cfg.Logger.Info("job retried", "job", j.id, "retry", next.id, "attempt", next.attempt, "of", next.attempts,
		"mode", next.modeChoice, "after", time.Since(j.created).Round(time.Millisecond), "cause", err.Error())
	s.poke()
	return true
}
