package exchange

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"sluice/rpc"
)

// DoExchange implements flight.FlightServiceServer: the server side of a
// multiplexed pipelined read (exchange.multiplex; the protocol is
// described at muxStream, its client). One stream carries every partition
// one consumer task reads from one producer task of this executor. Its
// errors do not name the executor's work dir.
func (s *FlightService) DoExchange(stream flight.FlightService_DoExchangeServer) error {
	return scrubStatus(s.doExchange(stream), s.env.WorkDir)
}

func (s *FlightService) doExchange(stream flight.FlightService_DoExchangeServer) error {
	if s.env.Registry == nil {
		return status.Error(codes.FailedPrecondition, "this executor has no pipelined registry")
	}
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	var req rpc.MuxRequest
	if err := proto.Unmarshal(first.GetAppMetadata(), &req); err != nil {
		return status.Errorf(codes.InvalidArgument, "malformed exchange request: %v", err)
	}
	if req.JobId == "" {
		return status.Error(codes.InvalidArgument, "the exchange's first message names no job")
	}
	if err := s.checkSecret(stream.Context(), req.JobId, req.JobSecret, s.env.producerWait()); err != nil {
		return err
	}
	s.exchanges.Add(1)
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	p := &muxPump{
		svc: s, stream: stream, ctx: ctx, cancel: cancel,
		job: req.JobId, stage: int(req.StageId), task: int(req.TaskId),
		channels: make(map[uint32]*muxServerChannel),
	}
	if err := p.apply(&req); err != nil {
		p.shutdown(err)
		return err
	}
	// The receive loop runs apart from the handler so that a pump can
	// fail the whole stream (a refused capability) while it waits in Recv;
	// it ends when the handler has returned, as gRPC then cancels the
	// stream's context.
	received := make(chan error, 1)
	go func() { received <- p.receive() }()
	select {
	case err := <-received:
		if errors.Is(err, io.EOF) {
			// The consumer will open no more channels: the open ones
			// run to their ends.
			p.mu.Lock()
			p.closed = true
			p.mu.Unlock()
			p.wg.Wait()
			return context.Cause(ctx)
		}
		p.shutdown(err)
		return err
	case <-ctx.Done():
		err := context.Cause(ctx)
		p.shutdown(err)
		return err
	}
}

// muxPump is the server state of one multiplexed stream: a pump goroutine
// per open channel, each sending only while it holds credit, so that a
// channel its consumer does not read stops taking from its queue (whose
// producer then stalls, as with a stream of its own) while the others
// flow.
type muxPump struct {
	svc    *FlightService
	stream flight.FlightService_DoExchangeServer
	ctx    context.Context
	cancel context.CancelCauseFunc
	job    string
	stage  int
	task   int

	sendMu sync.Mutex // serializes stream.Send

	mu       sync.Mutex
	channels map[uint32]*muxServerChannel
	closed   bool // no channel may start any more
	wg       sync.WaitGroup
}

// muxServerChannel is one channel's credit and cancellation.
type muxServerChannel struct {
	id        uint32
	partition int
	cancel    context.CancelFunc
	credit    int           // guarded by muxPump.mu
	more      chan struct{} // capacity 1: credit arrived
}

// shutdown stops every pump with cause and waits for them.
func (p *muxPump) shutdown(cause error) {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel(cause)
	p.wg.Wait()
}

// receive applies the consumer's messages until the stream ends.
func (p *muxPump) receive() error {
	for {
		fd, err := p.stream.Recv()
		if err != nil {
			return err
		}
		var req rpc.MuxRequest
		if err := proto.Unmarshal(fd.GetAppMetadata(), &req); err != nil {
			return status.Errorf(codes.InvalidArgument, "malformed exchange request: %v", err)
		}
		if err := p.apply(&req); err != nil {
			return err
		}
	}
}

// apply opens, credits and closes the channels req names.
func (p *muxPump) apply(req *rpc.MuxRequest) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	for _, o := range req.Open {
		if _, ok := p.channels[o.Channel]; ok {
			return status.Errorf(codes.InvalidArgument, "exchange channel %d opened twice", o.Channel)
		}
		if o.Credit <= 0 {
			return status.Errorf(codes.InvalidArgument, "exchange channel %d opened without credit", o.Channel)
		}
		ctx, cancel := context.WithCancel(p.ctx)
		ch := &muxServerChannel{id: o.Channel, partition: int(o.Partition), cancel: cancel, credit: int(o.Credit), more: make(chan struct{}, 1)}
		p.channels[o.Channel] = ch
		p.wg.Add(1)
		go p.run(ctx, ch, o.Capability)
	}
	for _, c := range req.Credit {
		if ch := p.channels[c.Channel]; ch != nil && c.Batches > 0 {
			ch.credit += int(c.Batches)
			select {
			case ch.more <- struct{}{}:
			default:
			}
		}
	}
	for _, id := range req.Close {
		// A channel closed before its end abandons its queue: its pump
		// stops and closes the queue reader (QueueReader.Close).
		if ch := p.channels[id]; ch != nil {
			ch.cancel()
		}
	}
	return nil
}

// run is channel ch's pump.
func (p *muxPump) run(ctx context.Context, ch *muxServerChannel, capability []byte) {
	defer p.wg.Done()
	defer func() {
		ch.cancel()
		p.mu.Lock()
		delete(p.channels, ch.id)
		p.mu.Unlock()
	}()
	err := p.pump(ctx, ch, capability)
	if err == nil || ctx.Err() != nil {
		// Ended, or closed by the consumer or with the stream: nobody
		// waits for a frame.
		return
	}
	st, _ := status.FromError(err)
	p.send(&flight.FlightData{AppMetadata: muxFrame(ch.id, rpc.MuxFrame_ERROR, st.Code(), st.Message())})
}

// pump streams ch's queue: the queue's schema, one batch per credit, and
// an END frame after the producer's end-of-stream marker. A producer's
// error, or a queue that cannot be taken, is returned as a status.
func (p *muxPump) pump(ctx context.Context, ch *muxServerChannel, capability []byte) error {
	env := p.svc.env
	k := QueueKey{JobID: p.job, StageID: p.stage, TaskID: p.task, Partition: ch.partition}
	var q *QueueReader
	var err error
	if env.Secrets == nil {
		q, err = env.Registry.Take(ctx, k, env.producerWait())
	} else {
		q, err = env.Registry.TakeCapable(ctx, k, env.producerWait(), capability)
	}
	if err != nil {
		switch {
		case errors.Is(err, ErrNoCapability):
			// A refused capability fails the whole stream, not only the
			// channel: the consumer asked for what it was not wired to.
			p.cancel(status.Error(codes.PermissionDenied, err.Error()))
			return nil
		case errors.Is(err, ErrJobReleased):
			return status.Errorf(codes.NotFound, "unknown job %s on executor %s: %v", p.job, env.ExecutorID, err)
		case ctx.Err() != nil:
			return nil
		}
		return status.Error(codes.NotFound, err.Error())
	}
	defer q.Close()
	p.svc.served.Add(1)
	w := flight.NewRecordWriter(&muxSender{p: p, meta: muxFrame(ch.id, rpc.MuxFrame_DATA, codes.OK, "")},
		append(env.Compression.ipcOptions(), ipc.WithSchema(q.Schema()), ipc.WithAllocator(p.svc.alloc()))...)
	defer w.Close()
	for {
		if err := p.awaitCredit(ctx, ch); err != nil {
			return nil
		}
		b, err := q.Next(ctx)
		if errors.Is(err, io.EOF) {
			// Close sends the schema if no batch did, so that the
			// consumer's reader always gets one.
			if err := w.Close(); err != nil {
				return streamErr(ctx, err)
			}
			return p.send(&flight.FlightData{AppMetadata: muxFrame(ch.id, rpc.MuxFrame_END, codes.OK, "")})
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return queueErrStatus(err)
		}
		err = w.Write(b)
		b.Release()
		if err != nil {
			return streamErr(ctx, err)
		}
	}
}

// awaitCredit takes one credit of ch, waiting for the consumer to grant
// it.
func (p *muxPump) awaitCredit(ctx context.Context, ch *muxServerChannel) error {
	for {
		p.mu.Lock()
		if ch.credit > 0 {
			ch.credit--
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
		select {
		case <-ch.more:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// send writes one message; pumps share the stream.
func (p *muxPump) send(fd *flight.FlightData) error {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	return p.stream.Send(fd)
}

// muxSender is a channel's end of the stream for its IPC writer: every
// message it writes carries the channel's DATA frame.
type muxSender struct {
	p    *muxPump
	meta []byte
}

func (m *muxSender) Send(fd *flight.FlightData) error {
	fd.AppMetadata = m.meta
	return m.p.send(fd)
}

// muxFrame encodes a server frame.
func muxFrame(channel uint32, kind rpc.MuxFrame_Kind, code codes.Code, msg string) []byte {
	b, err := proto.Marshal(&rpc.MuxFrame{Channel: channel, Kind: kind, Code: int32(code), Message: msg})
	if err != nil {
		panic(fmt.Sprintf("encoding an exchange frame: %v", err))
	}
	return b
}
