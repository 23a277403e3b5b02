//! Gzip members made by zlib itself (madler's, through `libz-sys`), for
//! index files that must equal py-wacz's byte for byte.
//!
//! flate2 here runs on zlib-rs, whose deflate (a port of zlib-ng's)
//! chooses other matches and blocks than zlib's: its members inflate to
//! the same text, but their bytes differ, and a WACZ `.idx` records each
//! member's length and SHA-256. py-wacz compresses with Python's `zlib`
//! module, that is with zlib at level 6 (`Z_DEFAULT_COMPRESSION`), window
//! bits 15 + 16 (a gzip wrapper: mtime 0, no name, OS byte 3), memory
//! level 8, the default strategy. This module makes the same call.
//! zlib's deflate has given the same bytes for the same parameters since
//! 1.2 (1.2.13 on Debian, 1.3.1 bundled by `libz-sys` when the system has
//! none).

// The one `unsafe` block of this module calls zlib's C API; see below.
#![allow(unsafe_code)]

use std::io;

use libz_sys as z;

/// The gzip member of `data` as Python's
/// `zlib.compressobj(level, wbits=16 + zlib.MAX_WBITS)` writes it
/// (`compress(data) + flush()`), `level` 0-9.
pub fn gzip_member(data: &[u8], level: u32) -> io::Result<Vec<u8>> {
    let level = i32::try_from(level.min(9)).unwrap_or(6);
    let fail = |what: &str, code: i32| io::Error::other(format!("zlib {what} failed ({code})"));
    // SAFETY: `stream` starts with null pointers and the allocator
    // below, is initialised by `deflateInit2_` with the library's own
    // version string and struct size, and ended by `deflateEnd` on every
    // path after a successful init. `next_in`/`avail_in` describe `data`,
    // which outlives the calls (zlib only reads it, the `*mut` is the C
    // signature's); `next_out`/`avail_out` describe the spare capacity of
    // `out`, and `out`'s length is set to what zlib reports written
    // (`total_out`), never past its capacity. Inputs over 4 GiB (more than
    // `avail_in` can say) are refused before any call.
    unsafe {
        let avail_in = z::uInt::try_from(data.len())
            .map_err(|_| io::Error::other("a block over 4 GiB cannot be one gzip member"))?;
        let mut stream = z::z_stream {
            next_in: std::ptr::null_mut(),
            avail_in: 0,
            total_in: 0,
            next_out: std::ptr::null_mut(),
            avail_out: 0,
            total_out: 0,
            msg: std::ptr::null_mut(),
            state: std::ptr::null_mut(),
            zalloc,
            zfree,
            opaque: std::ptr::null_mut(),
            data_type: 0,
            adler: 0,
            reserved: 0,
        };
        let rc = z::deflateInit2_(
            &mut stream,
            level,
            z::Z_DEFLATED,
            15 + 16,
            8,
            z::Z_DEFAULT_STRATEGY,
            z::zlibVersion(),
            std::mem::size_of::<z::z_stream>() as i32,
        );
        if rc != z::Z_OK {
            return Err(fail("deflateInit2", rc));
        }
        let bound = z::deflateBound(&mut stream, avail_in as z::uLong) as usize;
        let mut out: Vec<u8> = Vec::with_capacity(bound + 64);
        stream.next_in = data.as_ptr() as *mut u8;
        stream.avail_in = avail_in;
        stream.next_out = out.as_mut_ptr();
        stream.avail_out = z::uInt::try_from(out.capacity()).unwrap_or(z::uInt::MAX);
        let rc = z::deflate(&mut stream, z::Z_FINISH);
        let written = stream.total_out as usize;
        z::deflateEnd(&mut stream);
        if rc != z::Z_STREAM_END {
            return Err(fail("deflate", rc));
        }
        out.set_len(written.min(out.capacity()));
        Ok(out)
    }
}

/// zlib's allocator: C's `calloc` (zlib's own default), for the function
/// pointer `libz-sys` makes non-null.
extern "C" fn zalloc(_opaque: z::voidpf, items: z::uInt, size: z::uInt) -> z::voidpf {
    // SAFETY: calloc takes any sizes and returns null on failure, which
    // zlib checks (Z_MEM_ERROR).
    unsafe { libc::calloc(items as libc::size_t, size as libc::size_t) }
}

/// Frees what [`zalloc`] gave.
extern "C" fn zfree(_opaque: z::voidpf, address: z::voidpf) {
    // SAFETY: zlib frees only pointers [`zalloc`] returned, once.
    unsafe { libc::free(address) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn members_inflate_back_and_carry_zlibs_header() {
        for data in [&b""[..], b"a", &b"com,example)/ 2020 {}\n".repeat(5000)] {
            let gz = gzip_member(data, 6).unwrap();
            // mtime 0, XFL 0, OS 3: what Python's zlib writes.
            assert_eq!(&gz[..10], b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03");
            let mut back = Vec::new();
            flate2::read::GzDecoder::new(&gz[..])
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, data);
        }
    }
}
