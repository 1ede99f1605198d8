package flightsql

import (
	"context"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/session"
)

// SetSessionOptions sets the session's settings by Flight's session
// options, as SET statements do: each option is a setting
// (execution.mode, execution.target_partitions, ...), and a value that is
// not a string is written as one.
func (s *Server) SetSessionOptions(ctx context.Context, req *flight.SetSessionOptionsRequest) (*flight.SetSessionOptionsResult, error) {
	cs, err := sessionFrom(ctx)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	out := &flight.SetSessionOptionsResult{Errors: map[string]*flight.SetSessionOptionsResultError{}}
	err = s.sessions.withSession(cs, func(sess *session.Session) error {
		for name, v := range req.GetSessionOptions() {
			val, ok := optionText(v)
			if !ok {
				out.Errors[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidValue}
				continue
			}
			if _, known := sess.Settings.Get(name); !known {
				out.Errors[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidName}
				continue
			}
			if err := sess.Settings.Set(name, val); err != nil {
				out.Errors[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidValue}
			}
		}
		return nil
	})
	if err != nil {
		return nil, statusOf(err)
	}
	return out, nil
}

// GetSessionOptions reports every setting of the session as a string.
func (s *Server) GetSessionOptions(ctx context.Context, _ *flight.GetSessionOptionsRequest) (*flight.GetSessionOptionsResult, error) {
	cs, err := sessionFrom(ctx)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	out := &flight.GetSessionOptionsResult{SessionOptions: map[string]*flight.SessionOptionValue{}}
	err = s.sessions.withSession(cs, func(sess *session.Session) error {
		for _, k := range sess.Settings.Keys() {
			v, _ := sess.Settings.Get(k)
			out.SessionOptions[k] = &flight.SessionOptionValue{OptionValue: &pb.SessionOptionValue_StringValue{StringValue: v}}
		}
		return nil
	})
	if err != nil {
		return nil, statusOf(err)
	}
	return out, nil
}

// CloseSession ends the caller's session: its settings are forgotten and
// its connections closed once its last result is read.
func (s *Server) CloseSession(ctx context.Context, _ *flight.CloseSessionRequest) (*flight.CloseSessionResult, error) {
	cs, err := sessionFrom(ctx)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	s.sessions.close(cs)
	return &flight.CloseSessionResult{Status: flight.CloseSessionResultClosed}, nil
}

// optionText is a session option's value as setting text.
func optionText(v *flight.SessionOptionValue) (string, bool) {
	switch o := v.GetOptionValue().(type) {
	case *pb.SessionOptionValue_StringValue:
		return o.StringValue, true
	case *pb.SessionOptionValue_BoolValue:
		return strconv.FormatBool(o.BoolValue), true
	case *pb.SessionOptionValue_Int64Value:
		return strconv.FormatInt(o.Int64Value, 10), true
	case *pb.SessionOptionValue_DoubleValue:
		return strconv.FormatFloat(o.DoubleValue, 'g', -1, 64), true
	}
	return "", false
}
