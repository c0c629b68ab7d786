//! What the firmware asks the debug host over ARM semihosting beyond writing files
//! (those go through `sampler_core::cortex_m::SemihostingFile`).

use cortex_m_semihosting::nr;

/// Is `word` one of the words of the command line the debug host gives (SYS_GET_CMDLINE:
/// QEMU's `-semihosting-config …,arg=WORD` or `-append`)? False when there is none.
pub fn cmdline_has(word: &[u8]) -> bool {
    let mut buf = [0u8; 128];
    // The block SYS_GET_CMDLINE fills in: buffer address, then its size (updated to
    // the length written).
    let mut block = [buf.as_mut_ptr() as usize, buf.len() - 1];
    // SAFETY: the host writes at most `block[1]` bytes into `buf`, which outlives the call.
    let r = unsafe { cortex_m_semihosting::syscall(nr::GET_CMDLINE, &mut block) };
    if r != 0 {
        return false;
    }
    let line = buf.get(..block[1].min(buf.len())).unwrap_or(&[]);
    line.split(|&b| b == b' ' || b == 0).any(|w| w == word)
}
