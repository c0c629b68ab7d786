//! An ELF core file (`gcore`, a kernel's core dump) as the leak check's memory and
//! registers: the second input form beside raw RAM images and a registers file. Its
//! `PT_LOAD` segments are the RAM images, the first thread's `NT_PRSTATUS` note its
//! registers.

use heapsnap_profile::leaks::Image;
use object::elf;
use object::read::elf::{FileHeader, ProgramHeader};

use crate::frames::Registers;

/// What a core file holds for a leak check.
#[derive(Clone, Debug)]
pub struct Core {
    /// Its ELF machine (`EM_X86_64`, `EM_ARM`…): the program's must match.
    pub machine: u16,
    /// One image per dumped segment, named `FILE@ADDR`.
    pub images: Vec<Image>,
    /// The registers of the first thread (the one that crashed or was stopped).
    pub registers: Registers,
}

impl Core {
    /// The end of the image holding `addr`: with the stack pointer, the top of the
    /// stack when no symbol says where it is.
    pub fn image_end(&self, addr: u64) -> Option<u64> {
        self.images
            .iter()
            .find(|i| addr >= i.addr && addr < i.addr + i.bytes.len() as u64)
            .map(|i| i.addr + i.bytes.len() as u64)
    }
}

/// Read core file `data` (named `name` in messages).
pub fn read_core(name: &str, data: &[u8]) -> Result<Core, String> {
    // e_ident[EI_CLASS]: 1 = 32-bit, 2 = 64-bit.
    match data.get(4) {
        _ if !data.starts_with(b"\x7fELF") => Err(format!("{name}: not an ELF file")),
        Some(2) => read::<elf::FileHeader64<object::Endianness>>(name, data),
        Some(1) => read::<elf::FileHeader32<object::Endianness>>(name, data),
        _ => Err(format!("{name}: ELF of unknown class")),
    }
}

fn read<H: FileHeader<Endian = object::Endianness>>(
    name: &str,
    data: &[u8],
) -> Result<Core, String> {
    let bad = |e: object::Error| format!("{name}: not a readable ELF core file: {e}");
    let h = H::parse(data).map_err(bad)?;
    let endian = h.endian().map_err(bad)?;
    if h.e_type(endian) != elf::ET_CORE {
        return Err(format!(
            "{name}: an ELF file but not a core file (type {}; a core has type 4, ET_CORE: gdb's `gcore`, a kernel's core dump)",
            h.e_type(endian).0
        ));
    }
    let machine = h.e_machine(endian).0;
    let mut images = Vec::new();
    let mut prstatus: Option<&[u8]> = None;
    for ph in h.program_headers(endian, data).map_err(bad)? {
        match ph.p_type(endian) {
            elf::PT_LOAD => {
                let addr: u64 = ph.p_vaddr(endian).into();
                let bytes = ph.data(endian, data).map_err(|()| {
                    format!("{name}: the segment at {addr:#x} lies past the end of the file (a truncated core)")
                })?;
                if !bytes.is_empty() {
                    images.push(Image {
                        name: format!("{name}@{addr:#x}"),
                        addr,
                        bytes: bytes.to_vec(),
                    });
                }
            }
            elf::PT_NOTE => {
                let Some(mut notes) = ph.notes(endian, data).map_err(bad)? else {
                    continue;
                };
                while let Some(n) = notes.next().map_err(bad)? {
                    if prstatus.is_none()
                        && n.name() == b"CORE"
                        && n.n_type(endian) == elf::NT_PRSTATUS
                    {
                        prstatus = Some(n.desc());
                    }
                }
            }
            _ => {}
        }
    }
    if images.is_empty() {
        return Err(format!(
            "{name}: the core file holds no memory (no PT_LOAD segment with bytes)"
        ));
    }
    let mut registers = Registers::default();
    if let Some(desc) = prstatus {
        set_registers(name, machine, h.is_big_endian(), desc, &mut registers)?;
    }
    Ok(Core {
        machine,
        images,
        registers,
    })
}

/// The general-purpose registers of an `NT_PRSTATUS` note (Linux's `elf_prstatus`:
/// `pr_reg` after the signal, process ids and times), by the names gdb gives them.
fn set_registers(
    name: &str,
    machine: u16,
    big_endian: bool,
    desc: &[u8],
    regs: &mut Registers,
) -> Result<(), String> {
    const X86_64: [&str; 27] = [
        "r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx", "rdx",
        "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base", "gs_base", "ds",
        "es", "fs", "gs",
    ];
    const ARM: [&str; 18] = [
        "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "sp",
        "lr", "pc", "cpsr", "orig_r0",
    ];
    let aarch64: Vec<String> = (0..31)
        .map(|i| format!("x{i}"))
        .chain(["sp", "pc", "pstate"].map(String::from))
        .collect();
    // (offset of pr_reg, word size, names in order), by e_machine: EM_X86_64,
    // EM_ARM, EM_AARCH64.
    let (offset, word, names): (usize, usize, Vec<&str>) = match machine {
        62 => (112, 8, X86_64.to_vec()),
        40 => (72, 4, ARM.to_vec()),
        183 => (112, 8, aarch64.iter().map(String::as_str).collect()),
        m => {
            return Err(format!(
                "{name}: the registers of a core of ELF machine {m} are not known here (x86-64, ARM and AArch64 are); give them with --regs"
            ))
        }
    };
    if desc.len() < offset + word * names.len() {
        return Err(format!(
            "{name}: its NT_PRSTATUS note is {} bytes, too short for the registers of this machine",
            desc.len()
        ));
    }
    for (i, n) in names.iter().enumerate() {
        let b = &desc[offset + i * word..offset + (i + 1) * word];
        let v = b.iter().enumerate().fold(0u64, |v, (k, &x)| {
            let shift = if big_endian {
                (word - 1 - k) * 8
            } else {
                k * 8
            };
            v | (u64::from(x) << shift)
        });
        regs.set(machine, n, v)
            .map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(())
}
