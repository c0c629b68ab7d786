//! Streaming COBS framing as a postcard flavor.
//!
//! postcard's own `Cobs` flavor back-patches the output (it needs `IndexMut` on the
//! sink), which a UART or semihosting sink cannot offer. This one buffers at most one
//! COBS block (254 bytes) and emits each block once it is complete, so it works over
//! any sink; its output is byte-identical to the `cobs` crate's encoder (tested).

use postcard::ser_flavors::Flavor;

/// Longest run of non-zero bytes one COBS code byte can describe.
const BLOCK: usize = 254;

/// Wraps a sink flavor: bytes pushed in come out COBS-encoded, and
/// [`finalize`](Flavor::finalize) ends the frame with the `0x00` delimiter.
pub struct CobsFlavor<F: Flavor> {
    sink: F,
    block: [u8; BLOCK],
    len: u8,
    /// A full block was just written and nothing followed yet: the (empty) last group
    /// is then omitted, as the `cobs` crate does.
    after_full: bool,
}

impl<F: Flavor> CobsFlavor<F> {
    /// Start a frame on `sink`.
    pub fn new(sink: F) -> Self {
        Self {
            sink,
            block: [0; BLOCK],
            len: 0,
            after_full: false,
        }
    }

    /// Emit the pending block as `code, data…` (code = data length + 1).
    fn flush(&mut self) -> postcard::Result<()> {
        let n = usize::from(self.len);
        self.sink.try_push(self.len + 1)?;
        self.sink.try_extend(self.block.get(..n).unwrap_or(&[]))?;
        self.len = 0;
        Ok(())
    }
}

impl<F: Flavor> Flavor for CobsFlavor<F> {
    type Output = F::Output;

    #[inline]
    fn try_push(&mut self, byte: u8) -> postcard::Result<()> {
        self.after_full = false;
        if byte == 0 {
            return self.flush();
        }
        if let Some(slot) = self.block.get_mut(usize::from(self.len)) {
            *slot = byte;
            self.len += 1;
        }
        if usize::from(self.len) == BLOCK {
            // A full block's code (0xFF) implies no zero follows it.
            self.sink.try_push(0xFF)?;
            self.sink.try_extend(&self.block)?;
            self.len = 0;
            self.after_full = true;
        }
        Ok(())
    }

    fn finalize(mut self) -> postcard::Result<F::Output> {
        if !self.after_full {
            self.flush()?;
        }
        self.sink.try_push(0)?;
        self.sink.finalize()
    }
}
