package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"sluice/rpc"
)

// TestControlCallsDirect runs a query in both modes with the control
// calls made directly and over gRPC, and checks which way they went; a
// killed executor leaves the direct calls, so the scheduler's calls to it
// fail over gRPC and its work runs elsewhere.
func TestControlCallsDirect(t *testing.T) {
	for _, overGRPC := range []bool{false, true} {
		t.Run(fmt.Sprintf("grpc=%v", overGRPC), func(t *testing.T) {
			checkGoroutines(t)
			emb, cat := startCluster(t, EmbeddedConfig{Executors: 2, Policy: PolicyPush, ControlOverGRPC: overGRPC})
			c := newTestClient(t, emb.SchedulerAddr(), emb.Security())
			ctx := testContext(t, 60*time.Second)
			want := localRows(t, cat, heavyQuery)
			settings := map[string]string{"execution.mode": "blocking"}
			maps.Copy(settings, heavySettings)
			got, _, err := c.query(ctx, heavyQuery, settings)
			if err != nil {
				t.Fatalf("blocking: %v", err)
			}
			sameRows(t, "blocking", got, want, true)
			settings["execution.mode"] = "pipelined"
			j, err := c.submit(ctx, heavyQuery, settings)
			if err != nil {
				t.Fatal(err)
			}
			sameRows(t, "pipelined", readPipelined(t, ctx, c, j.placed(t)), want, true)
			for !finalState(j.last.State) {
				if j.last, err = j.stream.Recv(); err != nil {
					t.Fatal(err)
				}
			}
			if j.last.State != rpc.JobState_JOB_SUCCESSFUL {
				t.Fatalf("pipelined job: %v", j.last)
			}
			switch calls := emb.DirectCalls(); {
			case overGRPC && calls != 0:
				t.Errorf("%d direct calls with ControlOverGRPC", calls)
			case !overGRPC && calls == 0:
				t.Error("no control call was made directly")
			}
			if overGRPC {
				return
			}
			x := emb.Executors()[1]
			if emb.local.executor(x.GRPCAddress()) == nil {
				t.Fatalf("executor %s is not reachable directly", x.ID())
			}
			x.Kill()
			if emb.local.executor(x.GRPCAddress()) != nil {
				t.Errorf("killed executor %s is still reachable directly", x.ID())
			}
			if !x.leftLocal.Load() {
				t.Errorf("killed executor %s still calls the scheduler directly", x.ID())
			}
			settings["execution.mode"] = "blocking"
			got, _, err = c.query(ctx, heavyQuery, settings)
			if err != nil {
				t.Fatalf("after the kill: %v", err)
			}
			sameRows(t, "after the kill", got, want, true)
		})
	}
}

// TestDirectCallBehavesAsGRPC checks what a direct call shares with a
// gRPC call: the handler works on a copy of the request and the caller
// gets a copy of the response, errors and panics arrive as gRPC statuses,
// and the caller returns when its context ends though the handler does
// not.
func TestDirectCallBehavesAsGRPC(t *testing.T) {
	l := newLocalCalls()
	ctx := context.Background()
	in := &rpc.HeartbeatRequest{ExecutorId: "exec-1"}
	kept := &rpc.HeartbeatResponse{}
	resp, err := direct(ctx, l, in, func(_ context.Context, req *rpc.HeartbeatRequest) (*rpc.HeartbeatResponse, error) {
		req.ExecutorId = "changed by the handler"
		return kept, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if in.ExecutorId != "exec-1" {
		t.Errorf("the handler changed the caller's request: %q", in.ExecutorId)
	}
	if resp == kept || !proto.Equal(resp, kept) {
		t.Errorf("the caller got the handler's response itself, or a different one")
	}

	_, err = direct(ctx, l, in, func(context.Context, *rpc.HeartbeatRequest) (*rpc.HeartbeatResponse, error) {
		return nil, errors.New("plain failure")
	})
	if s, _ := status.FromError(err); s.Code() != codes.Unknown || s.Message() != "plain failure" {
		t.Errorf("plain error: got %v, want code Unknown with its message", err)
	}
	_, err = direct(ctx, l, in, func(context.Context, *rpc.HeartbeatRequest) (*rpc.HeartbeatResponse, error) {
		return nil, status.Error(codes.Unavailable, "going away")
	})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("status error: got %v, want Unavailable", err)
	}
	_, err = direct(ctx, l, in, func(context.Context, *rpc.HeartbeatRequest) (*rpc.HeartbeatResponse, error) {
		panic("handler bug")
	})
	if status.Code(err) != codes.Internal {
		t.Errorf("panic: got %v, want Internal", err)
	}

	release := make(chan struct{})
	defer close(release)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = direct(short, l, in, func(context.Context, *rpc.HeartbeatRequest) (*rpc.HeartbeatResponse, error) {
		<-release
		return &rpc.HeartbeatResponse{}, nil
	})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("stuck handler: got %v, want DeadlineExceeded", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("the caller waited %v for a stuck handler", waited)
	}
	done, stop := context.WithCancel(ctx)
	stop()
	called := false
	_, err = direct(done, l, in, func(context.Context, *rpc.HeartbeatRequest) (*rpc.HeartbeatResponse, error) {
		called = true
		return &rpc.HeartbeatResponse{}, nil
	})
	if status.Code(err) != codes.Canceled || called {
		t.Errorf("ended context: got %v (handler called: %v), want Canceled without a call", err, called)
	}
}

// TestLaunchCopySharesOnlyThePlan: the copy of a LaunchTasks request a
// direct call hands the executor equals the request (every field of both
// messages set, so a field added to them and not to launchCopy fails
// here), shares each task's stage plan with it and nothing else: changing
// any other part of the copy leaves the request as it was.
func TestLaunchCopySharesOnlyThePlan(t *testing.T) {
	task := func() *rpc.TaskDefinition {
		d := &rpc.TaskDefinition{}
		fillAll(d.ProtoReflect(), 3)
		return d
	}
	in := &rpc.LaunchTasksRequest{}
	fillAll(in.ProtoReflect(), 1)
	in.Tasks = []*rpc.TaskDefinition{task(), task()}
	in.Tasks[1].Plan = in.Tasks[0].Plan // tasks of one stage share its plan
	want := proto.Clone(in).(*rpc.LaunchTasksRequest)
	out := launchCopy(in)
	if !proto.Equal(out, in) {
		t.Fatalf("copy differs from the request:\n%v\n%v", out, in)
	}
	for i, c := range out.Tasks {
		if c == in.Tasks[i] || c.Plan != in.Tasks[i].Plan {
			t.Fatalf("task %d: the copy must be a new definition sharing the plan", i)
		}
		c.Id.TaskId++
		c.Partitions[0]++
		for k := range c.Settings {
			c.Settings[k] += "!"
		}
		c.OutputKey[0]++
		c.ReadCapabilities[0].Capability[0]++
		c.DynamicFilters[0].Column++
		c.Vcores++
	}
	out.Tasks = append(out.Tasks, task())
	if !proto.Equal(in, want) {
		t.Fatalf("changing the copy changed the request:\n%v\nwant\n%v", in, want)
	}
}

// fillAll sets every field of m to a value other than its zero: one
// element in lists and maps, messages filled to the given depth.
func fillAll(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			if fd.Kind() == protoreflect.MessageKind {
				e := l.NewElement()
				if depth > 0 {
					fillAll(e.Message(), depth-1)
				}
				l.Append(e)
			} else {
				l.Append(scalarValue(fd))
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			k := scalarValue(fd.MapKey()).MapKey()
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				v := mp.NewValue()
				if depth > 0 {
					fillAll(v.Message(), depth-1)
				}
				mp.Set(k, v)
			} else {
				mp.Set(k, scalarValue(fd.MapValue()))
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			if fd.ContainingOneof() != nil && m.WhichOneof(fd.ContainingOneof()) != nil {
				continue // one member of a oneof is enough
			}
			v := m.Mutable(fd).Message()
			if depth > 0 {
				fillAll(v, depth-1)
			}
		default:
			if fd.ContainingOneof() != nil && m.WhichOneof(fd.ContainingOneof()) != nil {
				continue
			}
			m.Set(fd, scalarValue(fd))
		}
	}
}

func scalarValue(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(1)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(7)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(7)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(7)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(7)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(1.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(1.5)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("x")
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{1, 2})
	}
	panic("unhandled kind " + fd.Kind().String())
}
