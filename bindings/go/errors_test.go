package gpusched

import (
	"errors"
	"testing"
)

func TestEveryCodeHasNameAndText(t *testing.T) {
	codes := map[Code]string{
		ErrInvalid: "GPUSCHED_EINVAL", ErrRange: "GPUSCHED_ERANGE", ErrTooBig: "GPUSCHED_E2BIG",
		ErrNotSupported: "GPUSCHED_ENOTSUP", ErrNoMemory: "GPUSCHED_ENOMEM", ErrLimit: "GPUSCHED_ELIMIT",
		ErrNotFound: "GPUSCHED_ENOENT", ErrExists: "GPUSCHED_EEXIST", ErrBusy: "GPUSCHED_EBUSY",
		ErrState: "GPUSCHED_ESTATE", ErrEmpty: "GPUSCHED_EEMPTY", ErrNoSpace: "GPUSCHED_ENOSPC",
		ErrParse: "GPUSCHED_EPARSE", ErrCorrupt: "GPUSCHED_ECORRUPT", ErrVersion: "GPUSCHED_EVERSION",
		ErrIO: "GPUSCHED_EIO",
	}
	for code, name := range codes {
		equal(t, code.Name(), name)
		if code.Error() == "unknown error" || code.Error() == "" {
			t.Fatalf("%s has no text", name)
		}
	}
	equal(t, Code(-999).Name(), "GPUSCHED_UNKNOWN")
	equal(t, Code(-999).Error(), "unknown error")
}

func TestErrorWrapsCode(t *testing.T) {
	c := cluster(t, tiny(t))
	err := c.Release(42)
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrExists) {
		t.Fatalf("errors.Is is wrong for %v", err)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatal("not an *Error")
	}
	equal(t, e.Op, "Cluster.Release")
	equal(t, e.Code, ErrNotFound)
	if e.Message == "" {
		t.Fatal("the library's message is missing")
	}
}
