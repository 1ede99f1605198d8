package cluster

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/physical"
	"sluice/rpc"
)

// Cross-stage dynamic filters on an executor (physical's
// dynamic_filter.go). A task whose scans a dynamic filter applies to gets
// the filter's keys in its definition when the scheduler already has them
// (blocking mode: the build stage has finished), or later, pushed by the
// scheduler (PushDynamicFilters) while the task runs (pipelined mode). The
// executor remembers a job's pushed keys until its data is removed, so
// that a task launched after the push still gets them.

// dynamicFilters is the executor's registry of pushed filter keys and of
// the running tasks waiting for them. The zero value is ready to use.
type dynamicFilters struct {
	mu   sync.Mutex
	jobs map[string]*jobFilters
}

type jobFilters struct {
	keys  map[int]*physical.KeySet // nil value: the filter is not coming
	tasks map[*physical.TaskContext]bool
}

func (d *dynamicFilters) job(id string) *jobFilters {
	if d.jobs == nil {
		d.jobs = map[string]*jobFilters{}
	}
	j := d.jobs[id]
	if j == nil {
		j = &jobFilters{keys: map[int]*physical.KeySet{}, tasks: map[*physical.TaskContext]bool{}}
		d.jobs[id] = j
	}
	return j
}

// start makes the task's scans wait for the filters its definition names,
// publishes the keys already known, and, when some are not, registers the
// task for pushes until the returned function is called.
func (d *dynamicFilters) start(def *rpc.TaskDefinition, body physical.Operator, tc *physical.TaskContext) (func(), error) {
	if len(def.DynamicFilters) == 0 {
		return func() {}, nil
	}
	scans := physical.ParquetScans(body)
	waiting := false
	for _, u := range def.DynamicFilters {
		if u.Scan < 0 || int(u.Scan) >= len(scans) {
			return nil, fmt.Errorf("dynamic filter %d: scan %d of the stage's %d", u.Id, u.Scan, len(scans))
		}
		if err := tc.ExpectDynamicFilter(scans[u.Scan], int(u.Column), int(u.Id)); err != nil {
			return nil, err
		}
		if u.Keys == nil {
			waiting = true
			continue
		}
		k, err := physical.DecodeKeySet(u.Keys)
		if err != nil {
			return nil, err
		}
		tc.PublishDynamicFilter(int(u.Id), k)
	}
	if !waiting {
		return func() {}, nil
	}
	job := def.GetId().GetJobId()
	d.mu.Lock()
	j := d.job(job)
	j.tasks[tc] = true
	for id, k := range j.keys {
		tc.PublishDynamicFilter(id, k)
	}
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		if j := d.jobs[job]; j != nil {
			delete(j.tasks, tc)
		}
		d.mu.Unlock()
	}, nil
}

// push records a job's filter keys and hands them to its running tasks.
func (d *dynamicFilters) push(job string, filters []*rpc.DynamicFilterKeys) error {
	keys := map[int]*physical.KeySet{}
	for _, m := range filters {
		k, err := physical.DecodeKeySet(m)
		if err != nil {
			return err
		}
		keys[int(m.Id)] = k
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.job(job)
	for id, k := range keys {
		j.keys[id] = k
		for tc := range j.tasks {
			tc.PublishDynamicFilter(id, k)
		}
	}
	return nil
}

// forget drops what the registry holds for a job.
func (d *dynamicFilters) forget(job string) {
	d.mu.Lock()
	delete(d.jobs, job)
	d.mu.Unlock()
}

// PushDynamicFilters hands a pipelined job's running tasks the keys of
// dynamic filters their scans wait for.
func (s *executorService) PushDynamicFilters(ctx context.Context, req *rpc.PushDynamicFiltersRequest) (*rpc.PushDynamicFiltersResponse, error) {
	if req.JobId == "" {
		return nil, status.Error(codes.InvalidArgument, "push dynamic filters: no job id given")
	}
	// Only a job this executor runs tasks of, with its secret: the keys of
	// any other would be kept for nobody, until no removal comes.
	known, ok := s.e.env.Secrets.Check(ctx, req.JobId, req.JobSecret, 0)
	if known && !ok {
		return nil, status.Errorf(codes.PermissionDenied, "the request does not carry the secret of job %s", req.JobId)
	}
	s.e.mu.Lock()
	removed := s.e.removed.Has(req.JobId)
	s.e.mu.Unlock()
	if !known || removed {
		return &rpc.PushDynamicFiltersResponse{}, nil
	}
	if err := s.e.dyn.push(req.JobId, req.Filters); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &rpc.PushDynamicFiltersResponse{}, nil
}

// dynamicFilterStatus encodes the keys a successful task collected for its
// status; a set too large to send is reported as unknown.
func dynamicFilterStatus(keys map[int]*physical.KeySet) []*rpc.DynamicFilterKeys {
	var out []*rpc.DynamicFilterKeys
	for id, k := range keys {
		m, err := physical.EncodeKeySet(id, k)
		if err != nil {
			m = &rpc.DynamicFilterKeys{Id: int32(id), Unknown: true}
		}
		out = append(out, m)
	}
	return out
}
