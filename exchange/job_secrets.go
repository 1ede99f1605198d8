package exchange

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"sluice/physical"
	"sluice/rpc"
)

// JobSecrets holds the secret of each job an executor runs tasks of, as
// the scheduler's task definitions carry it. The Flight service serves a
// job's shuffle files and pipelined queues only to tickets carrying the
// secret: the job's own tasks and the client that submitted it. Another
// user of the cluster, who has the cluster's token but not the job's
// secret, is refused; so is a ticket for the data an earlier scheduler
// instance left behind, whose secrets nobody has any more. Safe for
// concurrent use.
type JobSecrets struct {
	mu      sync.Mutex
	secrets map[string]string
	// forgotten are the jobs whose data was removed: a fetch for one
	// fails at once instead of waiting for its secret.
	forgotten *Remembered
	// changed is closed (and replaced) by every Bind.
	changed chan struct{}
}

// forgottenTTL is how long a removed job is remembered as such.
const forgottenTTL = time.Hour

// NewJobSecrets returns an empty set.
func NewJobSecrets() *JobSecrets {
	return &JobSecrets{secrets: map[string]string{}, forgotten: NewRemembered(forgottenTTL), changed: make(chan struct{})}
}

// ErrJobSecretMismatch is returned when a job's secret differs from the
// one already known.
var ErrJobSecretMismatch = errors.New("the job secret does not match the job's")

// Bind records job's secret when a task of the job arrives. A task whose
// secret differs from the one the job's earlier tasks carried is refused:
// the scheduler gives every task of a job the same secret.
func (s *JobSecrets) Bind(job, secret string) error {
	if secret == "" {
		return fmt.Errorf("task of job %s carries no job secret", job)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.secrets[job]; ok {
		if !rpc.Equal(old, secret) {
			return fmt.Errorf("task of job %s: %w", job, ErrJobSecretMismatch)
		}
		return nil
	}
	if s.forgotten.Has(job) {
		return fmt.Errorf("task of job %s: the job's data was removed", job)
	}
	s.secrets[job] = secret
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

// Check says whether secret is job's. known is false when this executor
// has no secret for the job (it ran none of its tasks, or the job's data
// was removed). With wait > 0 a job not yet known (its first task has not
// arrived: a pipelined consumer may ask before its producer is launched)
// is waited for that long, or until ctx is done.
func (s *JobSecrets) Check(ctx context.Context, job, secret string, wait time.Duration) (known, ok bool) {
	var timeout <-chan time.Time
	for {
		s.mu.Lock()
		want, known := s.secrets[job]
		gone := s.forgotten.Has(job)
		changed := s.changed
		s.mu.Unlock()
		if known || gone || wait <= 0 {
			return known, known && rpc.Equal(want, secret)
		}
		if timeout == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-changed:
		case <-timeout:
			return false, false
		case <-ctx.Done():
			return false, false
		}
	}
}

// Forget drops job's secret once its data is removed; later tasks of the
// job are refused.
func (s *JobSecrets) Forget(job string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.secrets, job)
	s.forgotten.Add(job, time.Now())
}

// jobSecretOf is the secret readers put in their tickets: the running
// task's (executors) or the job's being read (clients, which pass a
// *TaskEnv too).
func jobSecretOf(tc *physical.TaskContext) string {
	if te, ok := tc.Exchange.(*TaskEnv); ok && te != nil {
		return te.JobSecret
	}
	return ""
}

// Capabilities holds the capabilities of the pipelined queues a task's
// readers, or a client's, are wired to (TaskDefinition.read_capabilities,
// JobStatus.final_capabilities), by stage, task and partition.
type Capabilities map[capabilityKey][]byte

type capabilityKey struct{ stage, task, partition int32 }

// CapabilitiesOf indexes the capabilities of a task definition or a job
// status.
func CapabilitiesOf(caps []*rpc.PartitionCapability) Capabilities {
	if len(caps) == 0 {
		return nil
	}
	out := make(Capabilities, len(caps))
	for _, c := range caps {
		out[capabilityKey{c.StageId, c.TaskId, c.Partition}] = c.Capability
	}
	return out
}

// capabilityOf is the capability a reader puts in its ticket for
// partition partition of task task of stage stage: nil when the task (or
// client) holds none, and the producer refuses the ticket.
func capabilityOf(tc *physical.TaskContext, stage, task, partition int) []byte {
	if te, ok := tc.Exchange.(*TaskEnv); ok && te != nil {
		return te.Capabilities[capabilityKey{int32(stage), int32(task), int32(partition)}]
	}
	return nil
}
