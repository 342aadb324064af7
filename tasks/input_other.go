//go:build !unix

package tasks

// openNonblock is not needed where files cannot be FIFOs.
const openNonblock = 0
