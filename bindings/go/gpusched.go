// Package gpusched is the Go binding of libgpusched, the GPU cluster
// scheduling core: topologies, cluster state, gang placement with
// topology constraints, preemption and defragmentation plans, and the
// fair-share task queue.
//
// It calls the C library through cgo and finds it with pkg-config
// (package "gpusched"), so the library must be installed (meson install)
// or PKG_CONFIG_PATH must name its .pc file. Standard library only.
//
// Handles (Topology, Cluster, FairQueue) own C memory. Close releases it
// at once; a finalizer releases it if Close is never called. A method of a
// closed handle that can fail returns an error for which both
// errors.Is(err, ErrClosed) and errors.Is(err, ErrState) hold; accessors
// that cannot fail return zero values. A Topology is
// immutable and safe for concurrent use; a Cluster and a FairQueue
// serialize their calls with a mutex, so they too may be shared between
// goroutines (one call at a time runs).
//
// Errors carry the library's code and message: errors.Is(err,
// gpusched.ErrNoSpace) tests the code, and the text has the detail that
// the library's per-handle message gives. A placement that does not fit
// is an answer, not an error: Placement.Fits is false and
// Placement.Message explains why.
package gpusched

/*
#cgo pkg-config: gpusched
#include <stdlib.h>
#include <gpusched/gpusched.h>
*/
import "C"

// BindingVersion is the library version this binding was written for.
// The loaded library must have the same major version and at least this
// minor version (before 1.0, the same minor version: doc/abi.md).
const BindingVersion = "0.2.0"

// Version returns the version of the loaded library as major, minor,
// micro.
func Version() (major, minor, micro int) {
	v := uint32(C.gpusched_version())
	return int(v >> 16 & 0xffff), int(v >> 8 & 0xff), int(v & 0xff)
}

// VersionString returns the loaded library's version, "MAJOR.MINOR.MICRO".
func VersionString() string {
	return C.GoString(C.gpusched_version_string())
}

// HeaderVersion returns the version of the headers this package was
// compiled against.
func HeaderVersion() string {
	return C.GPUSCHED_VERSION_STRING
}

// None is the "no level, no domain, no class" value of the C API.
const None = ^uint32(0)
