package gpusched

/*
#include <gpusched/gpusched.h>
*/
import "C"

import "fmt"

// Code is one of the library's error codes (gpusched_status). A Code is
// itself an error, so errors.Is(err, ErrNoSpace) works on every error this
// package returns.
type Code int

// The library's error codes, with their C values.
const (
	ErrInvalid      Code = C.GPUSCHED_EINVAL
	ErrRange        Code = C.GPUSCHED_ERANGE
	ErrTooBig       Code = C.GPUSCHED_E2BIG
	ErrNotSupported Code = C.GPUSCHED_ENOTSUP
	ErrNoMemory     Code = C.GPUSCHED_ENOMEM
	ErrLimit        Code = C.GPUSCHED_ELIMIT
	ErrNotFound     Code = C.GPUSCHED_ENOENT
	ErrExists       Code = C.GPUSCHED_EEXIST
	ErrBusy         Code = C.GPUSCHED_EBUSY
	ErrState        Code = C.GPUSCHED_ESTATE
	ErrEmpty        Code = C.GPUSCHED_EEMPTY
	ErrNoSpace      Code = C.GPUSCHED_ENOSPC
	ErrParse        Code = C.GPUSCHED_EPARSE
	ErrCorrupt      Code = C.GPUSCHED_ECORRUPT
	ErrVersion      Code = C.GPUSCHED_EVERSION
	ErrIO           Code = C.GPUSCHED_EIO
)

// ErrClosed is returned by methods of a handle after Close.
var ErrClosed = fmt.Errorf("gpusched: handle is closed")

// Error returns the library's description of the code (gpusched_strerror).
func (c Code) Error() string {
	return C.GoString(C.gpusched_strerror(C.int(c)))
}

// Name returns the code's symbolic name, for example "GPUSCHED_ENOSPC".
func (c Code) Name() string {
	return C.GoString(C.gpusched_err_name(C.int(c)))
}

// Error is a failed library call: the call, the code and the message the
// library gave (which field, which line and column, which job).
type Error struct {
	Op      string // the Go method, for example "Cluster.Allocate"
	Code    Code
	Message string // the handle's message; may be empty
	closed  bool   // the handle was closed: errors.Is(err, ErrClosed)
}

func closedError(op string) *Error {
	return &Error{Op: op, Code: ErrState, Message: ErrClosed.Error(), closed: true}
}

// Is reports whether the error is ErrClosed (the Code is matched through
// Unwrap).
func (e *Error) Is(target error) bool { return e.closed && target == ErrClosed }

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Code.Error()
	}
	return fmt.Sprintf("gpusched: %s: %s: %s", e.Op, e.Code.Name(), msg)
}

// Unwrap gives the Code, so that errors.Is and errors.As see it.
func (e *Error) Unwrap() error { return e.Code }

// newError wraps a non-zero return code; msg is the handle's message.
func newError(op string, rc C.int, msg string) error {
	if rc == 0 {
		return nil
	}
	return &Error{Op: op, Code: Code(rc), Message: msg}
}
