package exchange

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"sluice/physical/mempool"
	"sluice/rpc"
)

// muxKey names one multiplexed stream of a consumer task: the producer
// task it reads and where that runs.
type muxKey struct {
	addr  string
	stage int
	task  int
}

// muxStreams are a consumer task's multiplexed streams
// (exchange.multiplex): between the task and each producer task on
// another executor, one Flight DoExchange stream carries every partition
// the task reads from that producer, instead of a DoGet stream each.
//
// The protocol (messages in rpc/plan.proto, each in FlightData's
// app_metadata):
//
//   - The consumer's first message names the job, the producer stage and
//     task and carries the job's secret; it and any later message may
//     open a channel (a partition, with the queue's capability and an
//     initial credit of exchange.queue_batches batches), return credit,
//     or close a channel. Channels are opened as the task's partitions
//     are executed, so one stream serves partitions that start at
//     different times, and a broadcast partition read twice is two
//     channels.
//   - The server runs a pump per channel (muxPump) that takes a batch
//     from its queue only while it holds credit for the channel and sends
//     it tagged with the channel; END and ERROR frames end a channel. A
//     refused capability fails the whole stream.
//   - The consumer demultiplexes into a buffer per channel that can never
//     hold more than the credit it granted (plus the schema), charged to
//     the task's memory pool, so the receive loop never waits for a
//     reader: a partition the task does not read holds up no other. A
//     reader returns one credit for each batch it takes, half the initial
//     credit at a time; closing a channel early tells the server to
//     abandon its queue.
//   - A broken stream fails every open channel with its error, so a lost
//     executor still surfaces as codes.Unavailable (FetchError).
//
// The stream lives while one of its channels is open: the last close
// cancels it.
type muxStreams struct {
	mu      sync.Mutex
	streams map[muxKey]*muxStream
}

// muxStream is the consumer's end of one DoExchange stream.
type muxStream struct {
	owner  *muxStreams
	key    muxKey
	stream flight.FlightService_DoExchangeClient
	cancel context.CancelFunc
	done   chan struct{} // the receive loop has returned
	refs   int           // open channels; guarded by owner.mu

	sendMu sync.Mutex // serializes stream.Send
	header *rpc.MuxRequest

	mu       sync.Mutex
	channels map[uint32]*muxChannel
	next     uint32
	err      error // the stream broke
}

// muxOpen is what a partition's read needs to open a channel.
type muxOpen struct {
	pool      *ClientPool
	addr      string
	job       string
	secret    string
	stage     int
	task      int
	partition int
	// capability is the queue's (rpc.PartitionCapability).
	capability []byte
	// credit is the batches the server may send ahead of the reader.
	credit int
	// mem is the consumer task's pool, charged with what the channel
	// buffers.
	mem *mempool.Pool
}

// open opens a channel of o.partition on the stream to o's producer task,
// starting the stream if the task has none open (started). The caller
// must close the channel.
func (ms *muxStreams) open(ctx context.Context, o muxOpen) (*muxChannel, bool, error) {
	k := muxKey{addr: o.addr, stage: o.stage, task: o.task}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.streams == nil {
		ms.streams = make(map[muxKey]*muxStream)
	}
	s := ms.streams[k]
	first := s == nil
	if first {
		client, err := o.pool.Get(o.addr)
		if err != nil {
			return nil, false, err
		}
		// The stream serves partitions of the whole task, so it must not
		// end with the partition that happened to open it: it is
		// cancelled when its last channel closes.
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		st, err := client.DoExchange(sctx)
		if err != nil {
			cancel()
			return nil, false, fmt.Errorf("flight do_exchange to %s: %w", o.addr, err)
		}
		s = &muxStream{
			owner: ms, key: k, stream: st, cancel: cancel, done: make(chan struct{}),
			header:   &rpc.MuxRequest{JobId: o.job, StageId: int32(o.stage), TaskId: int32(o.task), JobSecret: o.secret},
			channels: make(map[uint32]*muxChannel),
		}
		ms.streams[k] = s
		go s.receive()
	}
	s.refs++
	ch := s.addChannel(o)
	req := &rpc.MuxRequest{Open: []*rpc.MuxOpen{{Channel: ch.id, Partition: int32(o.partition), Capability: o.capability, Credit: int32(ch.granted)}}}
	if first {
		req.JobId, req.StageId, req.TaskId, req.JobSecret = s.header.JobId, s.header.StageId, s.header.TaskId, s.header.JobSecret
	}
	// A failed send is not the channel's error: the stream's status,
	// which the receive loop gets, is.
	s.send(req)
	return ch, first, nil
}

// release drops one channel's hold on s; the last one ends the stream.
func (ms *muxStreams) release(s *muxStream) {
	ms.mu.Lock()
	s.refs--
	last := s.refs == 0
	if last && ms.streams[s.key] == s {
		delete(ms.streams, s.key)
	}
	ms.mu.Unlock()
	if last {
		s.cancel()
		<-s.done
	}
}

func (s *muxStream) addChannel(o muxOpen) *muxChannel {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := &muxChannel{
		s: s, id: s.next, granted: max(o.credit, 1), returnAt: max(o.credit/2, 1),
		more: make(chan struct{}, 1),
		res:  o.mem.NewReservation("exchange mux buffer"),
	}
	s.next++
	if s.err != nil {
		ch.err = s.err
	} else {
		s.channels[ch.id] = ch
	}
	return ch
}

func (s *muxStream) send(req *rpc.MuxRequest) {
	b, err := proto.Marshal(req)
	if err != nil {
		panic(fmt.Sprintf("encoding an exchange request: %v", err))
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.stream.Send(&flight.FlightData{AppMetadata: b})
}

// receive hands each message to its channel until the stream ends; then
// every channel still open fails with the stream's error.
func (s *muxStream) receive() {
	defer close(s.done)
	for {
		fd, err := s.stream.Recv()
		if err == io.EOF {
			// The server ends a stream cleanly only after the consumer
			// stopped sending, which it never does while a channel is
			// open: a broken protocol, not a lost executor.
			err = status.Error(codes.Internal, "internal: the exchange stream ended before its partitions did")
		}
		if err != nil {
			s.fail(fmt.Errorf("flight exchange stream from %s: %w", s.key.addr, err))
			return
		}
		var f rpc.MuxFrame
		if err := proto.Unmarshal(fd.GetAppMetadata(), &f); err != nil {
			s.fail(fmt.Errorf("flight exchange stream from %s: malformed frame: %w", s.key.addr, err))
			return
		}
		s.mu.Lock()
		ch := s.channels[f.Channel]
		s.mu.Unlock()
		if ch == nil {
			// A channel the reader closed: what the server sent before
			// it learned so is dropped.
			continue
		}
		ch.deliver(&f, fd)
	}
}

// fail ends every open channel with err.
func (s *muxStream) fail(err error) {
	s.mu.Lock()
	s.err = err
	chans := s.channels
	s.channels = map[uint32]*muxChannel{}
	s.mu.Unlock()
	for _, ch := range chans {
		ch.finish(err)
	}
}

// muxChannel is one partition's read on a multiplexed stream: a buffer
// the receive loop fills and the partition's reader drains.
type muxChannel struct {
	s   *muxStream
	id  uint32
	res *mempool.Reservation

	mu         sync.Mutex
	buf        []muxItem
	schemaSeen bool
	// granted is how many more batches the server may send.
	granted int
	// taken is the batches the reader took whose credit was not returned
	// yet; it is returned once it reaches returnAt (half the initial
	// credit), so a credit message goes to the server every few batches
	// rather than after each. The server then still holds, or has sent,
	// at least the other half: the reader never waits for credit it kept.
	taken, returnAt int
	ended           bool  // END arrived
	err             error // ERROR arrived, the stream broke, or the buffer was refused memory
	closed          bool
	more            chan struct{} // capacity 1: the buffer or state changed
}

func (ch *muxChannel) wake() {
	select {
	case ch.more <- struct{}{}:
	default:
	}
}

// deliver files one frame of the channel. It never blocks: the server
// sends a batch only against credit, which bounds the buffer.
func (ch *muxChannel) deliver(f *rpc.MuxFrame, fd *flight.FlightData) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	defer ch.wake()
	if ch.closed || ch.ended || ch.err != nil {
		return
	}
	switch f.Kind {
	case rpc.MuxFrame_END:
		ch.ended = true
		return
	case rpc.MuxFrame_ERROR:
		ch.err = fmt.Errorf("flight exchange stream from %s: %w", ch.s.key.addr, status.Error(codes.Code(f.Code), f.Message))
		return
	}
	batch := ch.schemaSeen
	if batch {
		if ch.granted == 0 {
			ch.err = fmt.Errorf("flight exchange stream from %s: internal: a batch of partition channel %d beyond the credit granted", ch.s.key.addr, ch.id)
			return
		}
		ch.granted--
	}
	ch.schemaSeen = true
	n := int64(len(fd.DataHeader) + len(fd.DataBody))
	if err := ch.res.Grow(n); err != nil {
		ch.err = fmt.Errorf("buffering a batch received from %s: %w", ch.s.key.addr, err)
		return
	}
	ch.buf = append(ch.buf, muxItem{fd: fd, size: n, batch: batch})
}

// muxItem is one buffered message of a channel.
type muxItem struct {
	fd   *flight.FlightData
	size int64
	// batch is false for the channel's first message, its schema, which
	// spends no credit.
	batch bool
}

// finish fails the channel with err unless it has ended.
func (ch *muxChannel) finish(err error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if !ch.ended && ch.err == nil {
		ch.err = err
	}
	ch.wake()
}

// reader returns the channel as a Flight message stream for an IPC
// reader; its Recv honours ctx.
func (ch *muxChannel) reader(ctx context.Context) flight.DataStreamReader {
	return &muxChannelReader{ch: ch, ctx: ctx}
}

type muxChannelReader struct {
	ch  *muxChannel
	ctx context.Context
}

// Recv returns the channel's next message, io.EOF after its END, or its
// error. Taking a batch returns its credit to the server.
func (r *muxChannelReader) Recv() (*flight.FlightData, error) {
	ch := r.ch
	for {
		ch.mu.Lock()
		if len(ch.buf) > 0 {
			it := ch.buf[0]
			ch.buf[0] = muxItem{}
			ch.buf = ch.buf[1:]
			ch.res.Shrink(it.size)
			credit := 0
			if it.batch {
				ch.taken++
				if ch.taken >= ch.returnAt {
					credit, ch.taken = ch.taken, 0
					ch.granted += credit
				}
			}
			ch.mu.Unlock()
			if credit > 0 {
				ch.s.send(&rpc.MuxRequest{Credit: []*rpc.MuxCredit{{Channel: ch.id, Batches: int32(credit)}}})
			}
			return it.fd, nil
		}
		if ch.err != nil {
			err := ch.err
			ch.mu.Unlock()
			return nil, err
		}
		if ch.ended {
			ch.mu.Unlock()
			return nil, io.EOF
		}
		ch.mu.Unlock()
		select {
		case <-ch.more:
		case <-r.ctx.Done():
			return nil, r.ctx.Err()
		}
	}
}

// close ends the read: a channel closed before its end has the server
// abandon its queue. The last channel of a stream ends the stream.
func (ch *muxChannel) close() {
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		return
	}
	ch.closed = true
	early := !ch.ended && ch.err == nil
	ch.buf = nil
	ch.res.Free()
	ch.mu.Unlock()
	s := ch.s
	s.mu.Lock()
	delete(s.channels, ch.id)
	s.mu.Unlock()
	if early {
		s.send(&rpc.MuxRequest{Close: []uint32{ch.id}})
	}
	s.owner.release(s)
}
