package scheduler

import (
	"fmt"
	"slices"
	"time"
)

// Admission between the modes.
//
// A blocking job takes vcores one task at a time, as they free up; a
// pipelined job needs every vcore of its widest stage at once. Offered
// capacity in submission order alone, a pipelined job that does not fit
// lets every vcore freed meanwhile go to the jobs behind it, so a steady
// stream of blocking queries starves it for as long as the stream lasts.
// Two rules keep both kinds moving:
//
//  1. The oldest pipelined job waiting for capacity (the head waiter)
//     holds back the vcores it needs from every job behind it: what it
//     is offered and cannot use yet is kept for it rather than handed to
//     later jobs, so vcores accumulate for it as running tasks end. Jobs
//     older than it keep their turn (first come, first served), and
//     vcores beyond what it needs go on to the jobs behind it.
//  2. Once the head waiter has waited Config.AdmissionWait, it goes ahead
//     of the older jobs too, except those a pipelined job already went
//     ahead of: each job is overtaken at most once this way. The head
//     waiter then waits only for running tasks to end, and a blocking job
//     for at most one pipelined job that overtook it.
//
// The wait is visible: a waiting job's status says how many vcores it
// waits for and how many are held for it; a placed one's how long it was
// queued (JobStatus.queued_ms, EXPLAIN ANALYZE's summary).

// DefaultAdmissionWait is the Config.AdmissionWait used when it is zero.
const DefaultAdmissionWait = 2 * time.Second

// gangWaiter is implemented by graphs that must get all their vcores at
// once (pipelined).
type gangWaiter interface {
	// waitingVcores is how many vcores the job needs at once while it
	// waits to be placed (0 once placed or ended), and the executors it
	// must not be placed on.
	waitingVcores() (need int, avoid []string)
}

// waitingVcores implements gangWaiter.
func (g *pipelinedGraph) waitingVcores() (int, []string) {
	if g.placed || g.state != GraphRunning {
		return 0, nil
	}
	return g.need, g.cfg.Avoid
}

// admissionOrderLocked is the order in which jobs are offered capacity,
// with the head waiter (nil if no pipelined job waits) and whether it was
// moved ahead of older jobs. Callers hold s.mu.
func (s *Scheduler) admissionOrderLocked(now time.Time) (order []*job, head *job, promoted bool) {
	at := -1
	for i, j := range s.order {
		if gw, ok := j.graph.(gangWaiter); ok {
			if need, _ := gw.waitingVcores(); need > 0 {
				head, at = j, i
				break
			}
		}
	}
	if head == nil || now.Sub(head.created) < s.cfg.AdmissionWait {
		return s.order, head, false
	}
	older := s.order[:at]
	if !slices.ContainsFunc(older, func(j *job) bool { return !j.overtaken }) {
		return s.order, head, false
	}
	order = make([]*job, 0, len(s.order))
	for _, j := range older {
		if j.overtaken {
			order = append(order, j)
		}
	}
	order = append(order, head)
	for _, j := range older {
		if !j.overtaken {
			order = append(order, j)
		}
	}
	return append(order, s.order[at+1:]...), head, true
}

// holdLocked keeps up to the head waiter's need of the offered vcores
// from the jobs after it, lowering the offers, and returns how many it
// kept. Callers hold s.mu.
func holdLocked(head *job, offers []*Offer) int {
	need, avoid := head.graph.(gangWaiter).waitingVcores()
	held := 0
	for _, o := range offers {
		if held == need {
			break
		}
		if o.Free <= 0 || slices.Contains(avoid, o.ExecutorID) {
			continue
		}
		n := min(o.Free, need-held)
		o.Free -= n
		held += n
	}
	return held
}

// admittedLocked records that j was placed at now: how long it was queued, and,
// if it went ahead of older jobs, that they were overtaken. Callers hold
// s.mu.
func (s *Scheduler) admittedLocked(j *job, now time.Time, promoted bool) {
	j.placedAt = now
	j.held = 0
	if !promoted {
		return
	}
	for _, o := range s.order {
		if o == j {
			break
		}
		o.overtaken = true
	}
}

// admissionText says where a job stands in the admission queue, for its
// status: what a waiting pipelined job waits for, or how long a placed
// job was queued ("" for one placed at once).
func (j *job) admissionText(now time.Time) string {
	if !j.placedAt.IsZero() {
		if q := j.placedAt.Sub(j.created); q >= time.Millisecond {
			return fmt.Sprintf("queued %s before its tasks were placed", q.Round(time.Millisecond))
		}
		return ""
	}
	gw, ok := j.graph.(gangWaiter)
	if !ok || j.finished() {
		return ""
	}
	need, _ := gw.waitingVcores()
	if need == 0 {
		return ""
	}
	return fmt.Sprintf("waiting %s for %d free vcores at once; %d held for it as running tasks end", now.Sub(j.created).Round(time.Millisecond), need, j.held)
}

// queued is how long j waited to be placed, or has waited so far.
func (j *job) queued(now time.Time) time.Duration {
	if !j.placedAt.IsZero() {
		return j.placedAt.Sub(j.created)
	}
	if j.finished() {
		return 0
	}
	return now.Sub(j.created)
}
