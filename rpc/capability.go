package rpc

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// A pipelined queue (partition p of task t of stage s) is consumed once:
// the first reader takes its rows. The job's secret, which every task of
// the job holds, is therefore not enough to take one; a ticket must also
// carry the queue's capability, which the scheduler gives only to the
// consumer tasks wired to the queue (and, for the final stage, to the
// client).
//
// Capabilities are derived in two steps so that the executor holding a
// queue can check tickets without learning the capabilities of any other
// task's queues:
//
//	task key   = HMAC-SHA256(wiring key, job, stage, task)
//	capability = HMAC-SHA256(task key, partition)
//
// The wiring key is a random key of the job's, kept by the scheduler. A
// producer task receives its own task key (TaskDefinition.output_key), a
// consumer task the capabilities of the queues it reads
// (TaskDefinition.read_capabilities), the client those of the final
// stage's queues (JobStatus.final_capabilities).

// NewWiringKey returns a random 256-bit key for a pipelined job's
// capabilities.
func NewWiringKey() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		// As in RandomHex: a predictable key would be worse than stopping.
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return b
}

// PipelinedTaskKey is the key of the queues of task task of stage stage of
// job: what the producing executor checks tickets against.
func PipelinedTaskKey(wiringKey []byte, job string, stage, task int32) []byte {
	m := hmac.New(sha256.New, wiringKey)
	m.Write([]byte("sluice pipelined task\x00"))
	m.Write([]byte(job))
	m.Write([]byte{0})
	var b [8]byte
	binary.BigEndian.PutUint32(b[:4], uint32(stage))
	binary.BigEndian.PutUint32(b[4:], uint32(task))
	m.Write(b[:])
	return m.Sum(nil)
}

// PipelinedCapability is the capability of output partition partition of
// the task whose key is taskKey.
func PipelinedCapability(taskKey []byte, partition int32) []byte {
	m := hmac.New(sha256.New, taskKey)
	m.Write([]byte("sluice pipelined partition\x00"))
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(partition))
	m.Write(b[:])
	return m.Sum(nil)
}

// ValidCapability says, in constant time, whether capability is the one
// taskKey gives partition. A task without a key has no valid capability.
func ValidCapability(taskKey []byte, partition int32, capability []byte) bool {
	if len(taskKey) == 0 {
		return false
	}
	return hmac.Equal(PipelinedCapability(taskKey, partition), capability)
}
