// SPDX-License-Identifier: GPL-2.0
/*
 * disasm: exit sites, jump tables and entry sites on x86-64 code, no root needed.
 *
 * Two kinds of input, both embedded so the test is self-contained:
 *  - hand-assembled snippets: written in Intel syntax, assembled with GNU as and
 *    linked at 0x401000 (`ld -Ttext=0x401000`); the bytes and the listing in the
 *    comments are objdump's output for that link;
 *  - functions cut out of a real Rust program (the source is at the end of this
 *    file), built with rustc 1.95.0 `--edition 2021 -g -C opt-level=3` (rel_*) and
 *    `-C opt-level=0` (dbg_*). Every expected exit below was read off objdump's
 *    listing of that binary (the comments beside the bytes), not from what the code
 *    under test prints: that listing is the ground truth.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/disasm.h"
#include "testlib.h"

#define BASE 0x401000u

/* ---- hand-assembled snippets ---- */

/* ret_only: f = 0x401000, size 1 */
static const uint8_t ret_only[] = {
    0xc3, /* 401000: ret */
};

/* ret_imm16: f = 0x401000, size 6 */
static const uint8_t ret_imm16[] = {
    0x48, 0x89, 0xf8, /* 401000: mov rax,rdi */
    0xc2, 0x10, 0x00, /* 401003: ret 0x10 */
};

/* tail_jmp: f = 0x401000, size 7, g = 0x401027 */
static const uint8_t tail_jmp[] = {
    0x53,	      /* 401000: push rbx */
    0x48, 0x89, 0xfb, /* 401001: mov rbx,rdi */
    0x5b,	      /* 401004: pop rbx */
    0xeb, 0x20,	      /* 401005: jmp 401027 */
};

/* jmp_inside: f = 0x401000, size 14 */
static const uint8_t jmp_inside[] = {
    0x85, 0xff,			  /* 401000: test edi,edi */
    0x75, 0x04,			  /* 401002: jne 401008 */
    0x31, 0xc0,			  /* 401004: xor eax,eax */
    0xeb, 0x05,			  /* 401006: jmp 40100d */
    0xb8, 0x01, 0x00, 0x00, 0x00, /* 401008: mov eax,0x1 */
    0xc3,			  /* 40100d: ret */
};

/* jump_table: f = 0x401000, size 36, table = 0x401028 */
static const uint8_t jump_table[] = {
    0x53,				      /* 401000: push rbx */
    0x0f, 0xb6, 0x47, 0x20,		      /* 401001: movzx eax,BYTE PTR [rdi+0x20] */
    0x48, 0x8d, 0x0d, 0x1c, 0x00, 0x00, 0x00, /* 401005: lea rcx,[rip+0x1c] */
    0x48, 0x89, 0xfb,			      /* 40100c: mov rbx,rdi */
    0x48, 0x63, 0x04, 0x81,		      /* 40100f: movsxd rax,DWORD PTR [rcx+rax*4] */
    0x48, 0x01, 0xc8,			      /* 401013: add rax,rcx */
    0x3e, 0xff, 0xe0,			      /* 401016: notrack jmp rax */
    0x31, 0xc0,				      /* 401019: xor eax,eax */
    0xeb, 0x05,				      /* 40101b: jmp 401022 */
    0xb8, 0x01, 0x00, 0x00, 0x00,	      /* 40101d: mov eax,0x1 */
    0x5b,				      /* 401022: pop rbx */
    0xc3,				      /* 401023: ret */
};

/* jump_table_reversed: f = 0x401000, size 51, table = 0x401038 */
static const uint8_t jump_table_reversed[] = {
    0x48, 0x83, 0xec, 0x18,		      /* 401000: sub rsp,0x18 */
    0x48, 0x89, 0x7c, 0x24, 0x10,	      /* 401004: mov QWORD PTR [rsp+0x10],rdi */
    0x0f, 0xb6, 0x47, 0x20,		      /* 401009: movzx eax,BYTE PTR [rdi+0x20] */
    0x48, 0x89, 0x44, 0x24, 0x08,	      /* 40100d: mov QWORD PTR [rsp+0x8],rax */
    0x48, 0x8b, 0x4c, 0x24, 0x08,	      /* 401012: mov rcx,QWORD PTR [rsp+0x8] */
    0x48, 0x8d, 0x05, 0x1a, 0x00, 0x00, 0x00, /* 401017: lea rax,[rip+0x1a] */
    0x48, 0x63, 0x0c, 0x88,		      /* 40101e: movsxd rcx,DWORD PTR [rax+rcx*4] */
    0x48, 0x01, 0xc8,			      /* 401022: add rax,rcx */
    0xff, 0xe0,				      /* 401025: jmp rax */
    0x48, 0x83, 0xc4, 0x18,		      /* 401027: add rsp,0x18 */
    0xc3,				      /* 40102b: ret */
    0x31, 0xc0,				      /* 40102c: xor eax,eax */
    0x48, 0x83, 0xc4, 0x18,		      /* 40102e: add rsp,0x18 */
    0xc3,				      /* 401032: ret */
};

/* jump_table_hoisted: f = 0x401000, size 28, table = 0x401020 */
static const uint8_t jump_table_hoisted[] = {
    0x48, 0x8d, 0x0d, 0x19, 0x00, 0x00, 0x00, /* 401000: lea rcx,[rip+0x19] */
    0x31, 0xd2,				      /* 401007: xor edx,edx */
    0x0f, 0xb6, 0x04, 0x17,		      /* 401009: movzx eax,BYTE PTR [rdi+rdx*1] */
    0x48, 0x63, 0x04, 0x81,		      /* 40100d: movsxd rax,DWORD PTR [rcx+rax*4] */
    0x48, 0x01, 0xc8,			      /* 401011: add rax,rcx */
    0xff, 0xe0,				      /* 401014: jmp rax */
    0x48, 0xff, 0xc2,			      /* 401016: inc rdx */
    0xeb, 0xee,				      /* 401019: jmp 401009 */
    0xc3,				      /* 40101b: ret */
};

/* jump_table_clobbered: f = 0x401000, size 19, table = 0x401018 */
static const uint8_t jump_table_clobbered[] = {
    0x48, 0x8d, 0x0d, 0x11, 0x00, 0x00, 0x00, /* 401000: lea rcx,[rip+0x11] */
    0x48, 0x63, 0x04, 0x81,		      /* 401007: movsxd rax,DWORD PTR [rcx+rax*4] */
    0x48, 0x8b, 0x0f,			      /* 40100b: mov rcx,QWORD PTR [rdi] */
    0x48, 0x01, 0xc8,			      /* 40100e: add rax,rcx */
    0xff, 0xe0,				      /* 401011: jmp rax */
};

/* jump_table_base_from_memory: f = 0x401000, size 12 */
static const uint8_t jump_table_base_from_memory[] = {
    0x48, 0x8b, 0x0f,	    /* 401000: mov rcx,QWORD PTR [rdi] */
    0x48, 0x63, 0x04, 0x81, /* 401003: movsxd rax,DWORD PTR [rcx+rax*4] */
    0x48, 0x01, 0xc8,	    /* 401007: add rax,rcx */
    0xff, 0xe0,		    /* 40100a: jmp rax */
};

/* jmp_indirect_mem: f = 0x401000, size 10 */
static const uint8_t jmp_indirect_mem[] = {
    0x48, 0x8b, 0x07,	    /* 401000: mov rax,QWORD PTR [rdi] */
    0x48, 0x8b, 0x7f, 0x08, /* 401003: mov rdi,QWORD PTR [rdi+0x8] */
    0xff, 0x60, 0x18,	    /* 401007: jmp QWORD PTR [rax+0x18] */
};

/* jmp_table_nonpic: f = 0x401000, size 11 */
static const uint8_t jmp_table_nonpic[] = {
    0x0f, 0xb6, 0x07,			      /* 401000: movzx eax,BYTE PTR [rdi] */
    0xff, 0x24, 0xc5, 0x00, 0x20, 0x40, 0x00, /* 401003: jmp QWORD PTR [rax*8+0x402000] */
    0xc3,				      /* 40100a: ret */
};

/* jcc_out: f = 0x401000, size 11, g = 0x40104b */
static const uint8_t jcc_out[] = {
    0x48, 0x85, 0xff,		  /* 401000: test rdi,rdi */
    0x74, 0x46,			  /* 401003: je 40104b */
    0xb8, 0x01, 0x00, 0x00, 0x00, /* 401005: mov eax,0x1 */
    0xc3,			  /* 40100a: ret */
};

/* entry_push_first: f = 0x401000, size 25, g = 0x401019 */
static const uint8_t entry_push_first[] = {
    0x55,			  /* 401000: push rbp */
    0x41, 0x57,			  /* 401001: push r15 */
    0x53,			  /* 401003: push rbx */
    0x48, 0x83, 0xec, 0x10,	  /* 401004: sub rsp,0x10 */
    0x48, 0x89, 0xfb,		  /* 401008: mov rbx,rdi */
    0xe8, 0x09, 0x00, 0x00, 0x00, /* 40100b: call 401019 */
    0x48, 0x83, 0xc4, 0x10,	  /* 401010: add rsp,0x10 */
    0x5b,			  /* 401014: pop rbx */
    0x41, 0x5f,			  /* 401015: pop r15 */
    0x5d,			  /* 401017: pop rbp */
    0xc3,			  /* 401018: ret */
};

/* entry_sub_then_call: f = 0x401000, size 29, g = 0x40101d */
static const uint8_t entry_sub_then_call[] = {
    0x48, 0x83, 0xec, 0x58,	  /* 401000: sub rsp,0x58 */
    0x48, 0x89, 0x7c, 0x24, 0x50, /* 401004: mov QWORD PTR [rsp+0x50],rdi */
    0x48, 0x89, 0x74, 0x24, 0x48, /* 401009: mov QWORD PTR [rsp+0x48],rsi */
    0x48, 0x8d, 0x7c, 0x24, 0x20, /* 40100e: lea rdi,[rsp+0x20] */
    0xe8, 0x05, 0x00, 0x00, 0x00, /* 401013: call 40101d */
    0x48, 0x83, 0xc4, 0x58,	  /* 401018: add rsp,0x58 */
    0xc3,			  /* 40101c: ret */
};

/* entry_sret: f = 0x401000, size 14, g = 0x40100e */
static const uint8_t entry_sret[] = {
    0x48, 0x89, 0xf8,		  /* 401000: mov rax,rdi */
    0x48, 0x89, 0xf1,		  /* 401003: mov rcx,rsi */
    0x31, 0xf6,			  /* 401006: xor esi,esi */
    0xe8, 0x01, 0x00, 0x00, 0x00, /* 401008: call 40100e */
    0xc3,			  /* 40100d: ret */
};

/* entry_clobbered: f = 0x401000, size 14, g = 0x40100e */
static const uint8_t entry_clobbered[] = {
    0x48, 0x8b, 0x3f,		  /* 401000: mov rdi,QWORD PTR [rdi] */
    0x53,			  /* 401003: push rbx */
    0x48, 0x89, 0xfb,		  /* 401004: mov rbx,rdi */
    0xe8, 0x02, 0x00, 0x00, 0x00, /* 401007: call 40100e */
    0x5b,			  /* 40100c: pop rbx */
    0xc3,			  /* 40100d: ret */
};

/* entry_loop_head: f = 0x401000, size 16 */
static const uint8_t entry_loop_head[] = {
    0x48, 0x89, 0xf8,	    /* 401000: mov rax,rdi */
    0x48, 0x83, 0xc0, 0x01, /* 401003: add rax,0x1 */
    0x53,		    /* 401007: push rbx */
    0x5b,		    /* 401008: pop rbx */
    0x48, 0x83, 0xf8, 0x0a, /* 401009: cmp rax,0xa */
    0x75, 0xf4,		    /* 40100d: jne 401003 */
    0xc3,		    /* 40100f: ret */
};

/* entry_sp_unknown: f = 0x401000, size 14, g = 0x40100e */
static const uint8_t entry_sp_unknown[] = {
    0x48, 0x89, 0xf8,		  /* 401000: mov rax,rdi */
    0x48, 0x83, 0xe4, 0xf0,	  /* 401003: and rsp,0xfffffffffffffff0 */
    0x50,			  /* 401007: push rax */
    0xe8, 0x01, 0x00, 0x00, 0x00, /* 401008: call 40100e */
    0xc3,			  /* 40100d: ret */
};

/* entry_slot_overwritten: f = 0x401000, size 29, g = 0x40101d */
static const uint8_t entry_slot_overwritten[] = {
    0x48, 0x83, 0xec, 0x20,			    /* 401000: sub rsp,0x20 */
    0x48, 0x89, 0x7c, 0x24, 0x08,		    /* 401004: mov QWORD PTR [rsp+0x8],rdi */
    0x31, 0xff,					    /* 401009: xor edi,edi */
    0xc7, 0x44, 0x24, 0x0c, 0x00, 0x00, 0x00, 0x00, /* 40100b: mov DWORD PTR [rsp+0xc],0x0 */
    0xe8, 0x05, 0x00, 0x00, 0x00,		    /* 401013: call 40101d */
    0x48, 0x83, 0xc4, 0x20,			    /* 401018: add rsp,0x20 */
    0xc3,					    /* 40101c: ret */
};

/* entry_slot_kept: f = 0x401000, size 34, g = 0x401022 */
static const uint8_t entry_slot_kept[] = {
    0x48, 0x83, 0xec, 0x20,			    /* 401000: sub rsp,0x20 */
    0x48, 0x89, 0x7c, 0x24, 0x08,		    /* 401004: mov QWORD PTR [rsp+0x8],rdi */
    0x31, 0xff,					    /* 401009: xor edi,edi */
    0xc7, 0x44, 0x24, 0x10, 0x00, 0x00, 0x00, 0x00, /* 40100b: mov DWORD PTR [rsp+0x10],0x0 */
    0x0f, 0x11, 0x44, 0x24, 0x10,		    /* 401013: movups XMMWORD PTR [rsp+0x10],xmm0 */
    0xe8, 0x05, 0x00, 0x00, 0x00,		    /* 401018: call 401022 */
    0x48, 0x83, 0xc4, 0x20,			    /* 40101d: add rsp,0x20 */
    0xc3,					    /* 401021: ret */
};

/* entry_slot_via_pointer: f = 0x401000, size 29, g = 0x40101d */
static const uint8_t entry_slot_via_pointer[] = {
    0x48, 0x83, 0xec, 0x20,	  /* 401000: sub rsp,0x20 */
    0x48, 0x89, 0x7c, 0x24, 0x08, /* 401004: mov QWORD PTR [rsp+0x8],rdi */
    0x48, 0x8d, 0x04, 0x24,	  /* 401009: lea rax,[rsp] */
    0x31, 0xff,			  /* 40100d: xor edi,edi */
    0x0f, 0x11, 0x40, 0x08,	  /* 40100f: movups XMMWORD PTR [rax+0x8],xmm0 */
    0xe8, 0x05, 0x00, 0x00, 0x00, /* 401013: call 40101d */
    0x48, 0x83, 0xc4, 0x20,	  /* 401018: add rsp,0x20 */
    0xc3,			  /* 40101c: ret */
};

/* entry_stack_escaped: f = 0x401000, size 35, g = 0x401023 */
static const uint8_t entry_stack_escaped[] = {
    0x48, 0x83, 0xec, 0x20,		      /* 401000: sub rsp,0x20 */
    0x48, 0x89, 0x7c, 0x24, 0x08,	      /* 401004: mov QWORD PTR [rsp+0x8],rdi */
    0x48, 0x8d, 0x04, 0x24,		      /* 401009: lea rax,[rsp] */
    0x48, 0x01, 0xd0,			      /* 40100d: add rax,rdx */
    0x31, 0xff,				      /* 401010: xor edi,edi */
    0x48, 0xc7, 0x01, 0x00, 0x00, 0x00, 0x00, /* 401012: mov QWORD PTR [rcx],0x0 */
    0xe8, 0x05, 0x00, 0x00, 0x00,	      /* 401019: call 401023 */
    0x48, 0x83, 0xc4, 0x20,		      /* 40101e: add rsp,0x20 */
    0xc3,				      /* 401022: ret */
};

/* entry_stack_not_escaped: f = 0x401000, size 32, g = 0x401020 */
static const uint8_t entry_stack_not_escaped[] = {
    0x48, 0x83, 0xec, 0x20,		      /* 401000: sub rsp,0x20 */
    0x48, 0x89, 0x7c, 0x24, 0x08,	      /* 401004: mov QWORD PTR [rsp+0x8],rdi */
    0x48, 0x8d, 0x04, 0x24,		      /* 401009: lea rax,[rsp] */
    0x31, 0xff,				      /* 40100d: xor edi,edi */
    0x48, 0xc7, 0x01, 0x00, 0x00, 0x00, 0x00, /* 40100f: mov QWORD PTR [rcx],0x0 */
    0xe8, 0x05, 0x00, 0x00, 0x00,	      /* 401016: call 401020 */
    0x48, 0x83, 0xc4, 0x20,		      /* 40101b: add rsp,0x20 */
    0xc3,				      /* 40101f: ret */
};

/* entry_pop_self: f = 0x401000, size 17, g = 0x401011 */
static const uint8_t entry_pop_self[] = {
    0x48, 0x83, 0xec, 0x08,	  /* 401000: sub rsp,0x8 */
    0x48, 0x89, 0x3c, 0x24,	  /* 401004: mov QWORD PTR [rsp],rdi */
    0x31, 0xff,			  /* 401008: xor edi,edi */
    0x5e,			  /* 40100a: pop rsi */
    0xe8, 0x01, 0x00, 0x00, 0x00, /* 40100b: call 401011 */
    0xc3,			  /* 401010: ret */
};

/* entry_nop5: f = 0x401000, size 9 */
static const uint8_t entry_nop5[] = {
    0x0f, 0x1f, 0x44, 0x00, 0x00, /* 401000: nop DWORD PTR [rax+rax*1+0x0] */
    0x48, 0x89, 0xf8,		  /* 401005: mov rax,rdi */
    0xc3,			  /* 401008: ret */
};

/* entry_nop4_noncanonical: f = 0x401000, size 8 */
static const uint8_t entry_nop4_noncanonical[] = {
    0x0f, 0x1f, 0x04, 0x00, /* 401000: nop DWORD PTR [rax+rax*1] */
    0x48, 0x89, 0xf8,	    /* 401004: mov rax,rdi */
    0xc3,		    /* 401007: ret */
};

/* entry_endbr64: f = 0x401000, size 7 */
static const uint8_t entry_endbr64[] = {
    0xf3, 0x0f, 0x1e, 0xfa, /* 401000: endbr64 */
    0x53,		    /* 401004: push rbx */
    0x5b,		    /* 401005: pop rbx */
    0xc3,		    /* 401006: ret */
};

/* entry_ud2_only: f = 0x401000, size 2 */
static const uint8_t entry_ud2_only[] = {
    0x0f, 0x0b, /* 401000: ud2 */
};

/* entry_cs_nop: f = 0x401000, size 10 */
static const uint8_t entry_cs_nop[] = {
    0x2e, 0x66, 0x0f, 0x1f, 0x04, 0x00, /* 401000: cs nop WORD PTR [rax+rax*1] */
    0x48, 0x89, 0xf8,			/* 401006: mov rax,rdi */
    0xc3,				/* 401009: ret */
};

/* entry_thunk: f = 0x401000, size 2, g = 0x401012 */
static const uint8_t entry_thunk[] = {
    0xeb, 0x10, /* 401000: jmp 401012 */
};

/* branch_into_insn: f = 0x401000, size 8 */
static const uint8_t branch_into_insn[] = {
    0xeb, 0x01,			  /* 401000: jmp 401003 */
    0xb8, 0x90, 0x90, 0x90, 0x90, /* 401002: mov eax,0x90909090 */
    0xc3,			  /* 401007: ret */
};

/* ---- functions from a real Rust binary ---- */

/*
 * fix::middle::{{closure}} (the poll of `async fn middle`), release build,
 * 0x149b0..0x14c53. objdump shows one `ret` (0x14bb8); every direct jump and jcc
 * lands inside the function; the five `jmp rax` (0x149d3, 0x14a2a, 0x14a9f,
 * 0x14ab6, 0x14ade) each follow `lea rcx,[rip+X]; movsxd rax,[rcx+rax*4];
 * add rax,rcx`: jump-table dispatches on the state byte.
 */
static const uint8_t rel_middle_poll[] = {
    0x41, 0x57,				      /* 149b0: push r15 */
    0x41, 0x56,				      /* 149b2: push r14 */
    0x41, 0x54,				      /* 149b4: push r12 */
    0x53,				      /* 149b6: push rbx */
    0x48, 0x83, 0xec, 0x18,		      /* 149b7: sub rsp,0x18 */
    0x49, 0x89, 0xf6,			      /* 149bb: mov r14,rsi */
    0x48, 0x89, 0xfb,			      /* 149be: mov rbx,rdi */
    0x0f, 0xb6, 0x47, 0x20,		      /* 149c1: movzx eax,BYTE PTR [rdi+0x20] */
    0x48, 0x8d, 0x0d, 0x14, 0x31, 0xff, 0xff, /* 149c5: lea rcx,[rip+0xffffffffffff3114] */
    0x48, 0x63, 0x04, 0x81,		      /* 149cc: movsxd rax,DWORD PTR [rcx+rax*4] */
    0x48, 0x01, 0xc8,			      /* 149d0: add rax,rcx */
    0xff, 0xe0,				      /* 149d3: jmp rax */
    0x48, 0x8b, 0x03,			      /* 149d5: mov rax,QWORD PTR [rbx] */
    0x0f, 0x57, 0xc0,			      /* 149d8: xorps xmm0,xmm0 */
    0x0f, 0x11, 0x43, 0x08,		      /* 149db: movups XMMWORD PTR [rbx+0x8],xmm0 */
    0x48, 0x89, 0x43, 0x18,		      /* 149df: mov QWORD PTR [rbx+0x18],rax */
    0x31, 0xd2,				      /* 149e3: xor edx,edx */
    0x31, 0xf6,				      /* 149e5: xor esi,esi */
    0x48, 0x39, 0xc6,			      /* 149e7: cmp rsi,rax */
    0x0f, 0x83, 0x91, 0x01, 0x00, 0x00,	      /* 149ea: jae 14b81 */
    0x48, 0x8d, 0x46, 0x01,		      /* 149f0: lea rax,[rsi+0x1] */
    0x48, 0x89, 0x43, 0x10,		      /* 149f4: mov QWORD PTR [rbx+0x10],rax */
    0x48, 0x89, 0x53, 0x28,		      /* 149f8: mov QWORD PTR [rbx+0x28],rdx */
    0x48, 0x89, 0xe7,			      /* 149fc: mov rdi,rsp */
    0xe8, 0x0c, 0xfd, 0xff, 0xff,	      /* 149ff: call 14710 */
    0x48, 0x8b, 0x44, 0x24, 0x10,	      /* 14a04: mov rax,QWORD PTR [rsp+0x10] */
    0x48, 0x89, 0x43, 0x40,		      /* 14a09: mov QWORD PTR [rbx+0x40],rax */
    0x0f, 0x10, 0x04, 0x24,		      /* 14a0d: movups xmm0,XMMWORD PTR [rsp] */
    0x0f, 0x11, 0x43, 0x30,		      /* 14a11: movups XMMWORD PTR [rbx+0x30],xmm0 */
    0x4d, 0x8b, 0x3e,			      /* 14a15: mov r15,QWORD PTR [r14] */
    0x0f, 0xb6, 0x43, 0x41,		      /* 14a18: movzx eax,BYTE PTR [rbx+0x41] */
    0x48, 0x8d, 0x0d, 0xe5, 0x30, 0xff, 0xff, /* 14a1c: lea rcx,[rip+0xffffffffffff30e5] */
    0x48, 0x63, 0x04, 0x81,		      /* 14a23: movsxd rax,DWORD PTR [rcx+rax*4] */
    0x48, 0x01, 0xc8,			      /* 14a27: add rax,rcx */
    0xff, 0xe0,				      /* 14a2a: jmp rax */
    0x4d, 0x8b, 0x3e,			      /* 14a2c: mov r15,QWORD PTR [r14] */
    0x4c, 0x8d, 0x63, 0x28,		      /* 14a2f: lea r12,[rbx+0x28] */
    0x80, 0x7b, 0x28, 0x00,		      /* 14a33: cmp BYTE PTR [rbx+0x28],0x0 */
    0x0f, 0x84, 0xdb, 0x00, 0x00, 0x00,	      /* 14a37: je 14b18 */
    0x48, 0x8b, 0x53, 0x08,		      /* 14a3d: mov rdx,QWORD PTR [rbx+0x8] */
    0x48, 0xb8, 0xb7, 0x6d, 0xdb, 0xb6, 0x6d,
    0xdb, 0xb6, 0x6d,	    /* 14a41: movabs rax,0x6db6db6db6db6db7 */
    0x48, 0x0f, 0xaf, 0xc2, /* 14a4b: imul rax,rdx */
    0x48, 0xb9, 0xdb, 0xb6, 0x6d, 0xdb, 0xb6,
    0x6d, 0xdb, 0xb6, /* 14a4f: movabs rcx,0xb6db6db6db6db6db */
    0x48, 0x01, 0xc1, /* 14a59: add rcx,rax */
    0x48, 0xb8, 0x91, 0x24, 0x49, 0x92, 0x24,
    0x49, 0x92, 0x24,			      /* 14a5c: movabs rax,0x2492492492492491 */
    0x48, 0x39, 0xc1,			      /* 14a66: cmp rcx,rax */
    0x0f, 0x87, 0x01, 0x01, 0x00, 0x00,	      /* 14a69: ja 14b70 */
    0x48, 0x89, 0xe7,			      /* 14a6f: mov rdi,rsp */
    0x48, 0x89, 0xd6,			      /* 14a72: mov rsi,rdx */
    0xe8, 0x96, 0xfc, 0xff, 0xff,	      /* 14a75: call 14710 */
    0x48, 0x8b, 0x44, 0x24, 0x10,	      /* 14a7a: mov rax,QWORD PTR [rsp+0x10] */
    0x49, 0x89, 0x44, 0x24, 0x10,	      /* 14a7f: mov QWORD PTR [r12+0x10],rax */
    0x0f, 0x10, 0x04, 0x24,		      /* 14a84: movups xmm0,XMMWORD PTR [rsp] */
    0x41, 0x0f, 0x11, 0x04, 0x24,	      /* 14a88: movups XMMWORD PTR [r12],xmm0 */
    0x0f, 0xb6, 0x43, 0x39,		      /* 14a8d: movzx eax,BYTE PTR [rbx+0x39] */
    0x48, 0x8d, 0x0d, 0x60, 0x30, 0xff, 0xff, /* 14a91: lea rcx,[rip+0xffffffffffff3060] */
    0x48, 0x63, 0x04, 0x81,		      /* 14a98: movsxd rax,DWORD PTR [rcx+rax*4] */
    0x48, 0x01, 0xc8,			      /* 14a9c: add rax,rcx */
    0xff, 0xe0,				      /* 14a9f: jmp rax */
    0x4d, 0x8b, 0x3e,			      /* 14aa1: mov r15,QWORD PTR [r14] */
    0x0f, 0xb6, 0x43, 0x39,		      /* 14aa4: movzx eax,BYTE PTR [rbx+0x39] */
    0x48, 0x8d, 0x0d, 0x49, 0x30, 0xff, 0xff, /* 14aa8: lea rcx,[rip+0xffffffffffff3049] */
    0x48, 0x63, 0x04, 0x81,		      /* 14aaf: movsxd rax,DWORD PTR [rcx+rax*4] */
    0x48, 0x01, 0xc8,			      /* 14ab3: add rax,rcx */
    0xff, 0xe0,				      /* 14ab6: jmp rax */
    0x48, 0x8b, 0x43, 0x28,		      /* 14ab8: mov rax,QWORD PTR [rbx+0x28] */
    0x48, 0x89, 0x43, 0x30,		      /* 14abc: mov QWORD PTR [rbx+0x30],rax */
    0xc6, 0x43, 0x38, 0x00,		      /* 14ac0: mov BYTE PTR [rbx+0x38],0x0 */
    0xe9, 0xc0, 0x00, 0x00, 0x00,	      /* 14ac4: jmp 14b89 */
    0x4d, 0x8b, 0x3e,			      /* 14ac9: mov r15,QWORD PTR [r14] */
    0x0f, 0xb6, 0x43, 0x41,		      /* 14acc: movzx eax,BYTE PTR [rbx+0x41] */
    0x48, 0x8d, 0x0d, 0x31, 0x30, 0xff, 0xff, /* 14ad0: lea rcx,[rip+0xffffffffffff3031] */
    0x48, 0x63, 0x04, 0x81,		      /* 14ad7: movsxd rax,DWORD PTR [rcx+rax*4] */
    0x48, 0x01, 0xc8,			      /* 14adb: add rax,rcx */
    0xff, 0xe0,				      /* 14ade: jmp rax */
    0x48, 0x8b, 0x43, 0x30,		      /* 14ae0: mov rax,QWORD PTR [rbx+0x30] */
    0x48, 0x89, 0x43, 0x38,		      /* 14ae4: mov QWORD PTR [rbx+0x38],rax */
    0xc6, 0x43, 0x40, 0x00,		      /* 14ae8: mov BYTE PTR [rbx+0x40],0x0 */
    0xeb, 0x3f,				      /* 14aec: jmp 14b2d */
    0x80, 0x7b, 0x40, 0x00,		      /* 14aee: cmp BYTE PTR [rbx+0x40],0x0 */
    0x74, 0x39,				      /* 14af2: je 14b2d */
    0x48, 0x8b, 0x43, 0x38,		      /* 14af4: mov rax,QWORD PTR [rbx+0x38] */
    0x48, 0x8d, 0x04, 0x40,		      /* 14af8: lea rax,[rax+rax*2] */
    0xc6, 0x43, 0x41, 0x01,		      /* 14afc: mov BYTE PTR [rbx+0x41],0x1 */
    0x31, 0xc9,				      /* 14b00: xor ecx,ecx */
    0x48, 0x83, 0xf9, 0x01,		      /* 14b02: cmp rcx,0x1 */
    0x74, 0x42,				      /* 14b06: je 14b4a */
    0x4c, 0x8d, 0x63, 0x28,		      /* 14b08: lea r12,[rbx+0x28] */
    0x48, 0x03, 0x43, 0x28,		      /* 14b0c: add rax,QWORD PTR [rbx+0x28] */
    0x48, 0x89, 0x43, 0x08,		      /* 14b10: mov QWORD PTR [rbx+0x8],rax */
    0xc6, 0x43, 0x28, 0x00,		      /* 14b14: mov BYTE PTR [rbx+0x28],0x0 */
    0x41, 0xc6, 0x04, 0x24, 0x01,	      /* 14b18: mov BYTE PTR [r12],0x1 */
    0x49, 0x8b, 0x07,			      /* 14b1d: mov rax,QWORD PTR [r15] */
    0x49, 0x8b, 0x7f, 0x08,		      /* 14b20: mov rdi,QWORD PTR [r15+0x8] */
    0xff, 0x50, 0x10,			      /* 14b24: call QWORD PTR [rax+0x10] */
    0xc6, 0x43, 0x20, 0x04,		      /* 14b27: mov BYTE PTR [rbx+0x20],0x4 */
    0xeb, 0x7b,				      /* 14b2b: jmp 14ba8 */
    0xc6, 0x43, 0x40, 0x01,		      /* 14b2d: mov BYTE PTR [rbx+0x40],0x1 */
    0x49, 0x8b, 0x07,			      /* 14b31: mov rax,QWORD PTR [r15] */
    0x49, 0x8b, 0x7f, 0x08,		      /* 14b34: mov rdi,QWORD PTR [r15+0x8] */
    0xff, 0x50, 0x10,			      /* 14b38: call QWORD PTR [rax+0x10] */
    0xc6, 0x43, 0x41, 0x03,		      /* 14b3b: mov BYTE PTR [rbx+0x41],0x3 */
    0xb9, 0x01, 0x00, 0x00, 0x00,	      /* 14b3f: mov ecx,0x1 */
    0x48, 0x83, 0xf9, 0x01,		      /* 14b44: cmp rcx,0x1 */
    0x75, 0xbe,				      /* 14b48: jne 14b08 */
    0xc6, 0x43, 0x20, 0x03,		      /* 14b4a: mov BYTE PTR [rbx+0x20],0x3 */
    0xeb, 0x58,				      /* 14b4e: jmp 14ba8 */
    0x80, 0x7b, 0x38, 0x00,		      /* 14b50: cmp BYTE PTR [rbx+0x38],0x0 */
    0x74, 0x33,				      /* 14b54: je 14b89 */
    0x48, 0x8b, 0x43, 0x30,		      /* 14b56: mov rax,QWORD PTR [rbx+0x30] */
    0x48, 0x8d, 0x14, 0x40,		      /* 14b5a: lea rdx,[rax+rax*2] */
    0xc6, 0x43, 0x39, 0x01,		      /* 14b5e: mov BYTE PTR [rbx+0x39],0x1 */
    0x31, 0xc0,				      /* 14b62: xor eax,eax */
    0xa8, 0x01,				      /* 14b64: test al,0x1 */
    0x75, 0x3c,				      /* 14b66: jne 14ba4 */
    0x48, 0x33, 0x53, 0x08,		      /* 14b68: xor rdx,QWORD PTR [rbx+0x8] */
    0x48, 0x89, 0x53, 0x08,		      /* 14b6c: mov QWORD PTR [rbx+0x8],rdx */
    0x48, 0x8b, 0x73, 0x10,		      /* 14b70: mov rsi,QWORD PTR [rbx+0x10] */
    0x48, 0x8b, 0x43, 0x18,		      /* 14b74: mov rax,QWORD PTR [rbx+0x18] */
    0x48, 0x39, 0xc6,			      /* 14b78: cmp rsi,rax */
    0x0f, 0x82, 0x6f, 0xfe, 0xff, 0xff,	      /* 14b7b: jb 149f0 */
    0xc6, 0x43, 0x20, 0x01,		      /* 14b81: mov BYTE PTR [rbx+0x20],0x1 */
    0x31, 0xc0,				      /* 14b85: xor eax,eax */
    0xeb, 0x24,				      /* 14b87: jmp 14bad */
    0xc6, 0x43, 0x38, 0x01,		      /* 14b89: mov BYTE PTR [rbx+0x38],0x1 */
    0x49, 0x8b, 0x07,			      /* 14b8d: mov rax,QWORD PTR [r15] */
    0x49, 0x8b, 0x7f, 0x08,		      /* 14b90: mov rdi,QWORD PTR [r15+0x8] */
    0xff, 0x50, 0x10,			      /* 14b94: call QWORD PTR [rax+0x10] */
    0xc6, 0x43, 0x39, 0x03,		      /* 14b97: mov BYTE PTR [rbx+0x39],0x3 */
    0xb8, 0x01, 0x00, 0x00, 0x00,	      /* 14b9b: mov eax,0x1 */
    0xa8, 0x01,				      /* 14ba0: test al,0x1 */
    0x74, 0xc4,				      /* 14ba2: je 14b68 */
    0xc6, 0x43, 0x20, 0x05,		      /* 14ba4: mov BYTE PTR [rbx+0x20],0x5 */
    0xb8, 0x01, 0x00, 0x00, 0x00,	      /* 14ba8: mov eax,0x1 */
    0x48, 0x83, 0xc4, 0x18,		      /* 14bad: add rsp,0x18 */
    0x5b,				      /* 14bb1: pop rbx */
    0x41, 0x5c,				      /* 14bb2: pop r12 */
    0x41, 0x5e,				      /* 14bb4: pop r14 */
    0x41, 0x5f,				      /* 14bb6: pop r15 */
    0xc3,				      /* 14bb8: ret */
    0x48, 0x8d, 0x3d, 0x40, 0xeb, 0x03, 0x00, /* 14bb9: lea rdi,[rip+0x3eb40] */
    0xff, 0x15, 0x9a, 0x0a, 0x04, 0x00,	      /* 14bc0: call QWORD PTR [rip+0x40a9a] */
    0x48, 0x8d, 0x3d, 0x33, 0xeb, 0x03, 0x00, /* 14bc6: lea rdi,[rip+0x3eb33] */
    0xff, 0x15, 0x95, 0x0a, 0x04, 0x00,	      /* 14bcd: call QWORD PTR [rip+0x40a95] */
    0x48, 0x8d, 0x3d, 0xae, 0xea, 0x03, 0x00, /* 14bd3: lea rdi,[rip+0x3eaae] */
    0xff, 0x15, 0x80, 0x0a, 0x04, 0x00,	      /* 14bda: call QWORD PTR [rip+0x40a80] */
    0xeb, 0x2b,				      /* 14be0: jmp 14c0d */
    0x48, 0x8d, 0x3d, 0x9f, 0xea, 0x03, 0x00, /* 14be2: lea rdi,[rip+0x3ea9f] */
    0xff, 0x15, 0x79, 0x0a, 0x04, 0x00,	      /* 14be9: call QWORD PTR [rip+0x40a79] */
    0xeb, 0x1c,				      /* 14bef: jmp 14c0d */
    0x48, 0x8d, 0x3d, 0x90, 0xea, 0x03, 0x00, /* 14bf1: lea rdi,[rip+0x3ea90] */
    0xff, 0x15, 0x62, 0x0a, 0x04, 0x00,	      /* 14bf8: call QWORD PTR [rip+0x40a62] */
    0xeb, 0x0d,				      /* 14bfe: jmp 14c0d */
    0x48, 0x8d, 0x3d, 0x81, 0xea, 0x03, 0x00, /* 14c00: lea rdi,[rip+0x3ea81] */
    0xff, 0x15, 0x5b, 0x0a, 0x04, 0x00,	      /* 14c07: call QWORD PTR [rip+0x40a5b] */
    0x0f, 0x0b,				      /* 14c0d: ud2 */
    0x48, 0x89, 0xc7,			      /* 14c0f: mov rdi,rax */
    0xc6, 0x43, 0x39, 0x02,		      /* 14c12: mov BYTE PTR [rbx+0x39],0x2 */
    0xc6, 0x43, 0x20, 0x02,		      /* 14c16: mov BYTE PTR [rbx+0x20],0x2 */
    0xe8, 0x01, 0xda, 0x03, 0x00,	      /* 14c1a: call 52620 */
    0x48, 0x89, 0xc7,			      /* 14c1f: mov rdi,rax */
    0xc6, 0x43, 0x20, 0x02,		      /* 14c22: mov BYTE PTR [rbx+0x20],0x2 */
    0xe8, 0xf5, 0xd9, 0x03, 0x00,	      /* 14c26: call 52620 */
    0x48, 0x89, 0xc7,			      /* 14c2b: mov rdi,rax */
    0xc6, 0x43, 0x41, 0x02,		      /* 14c2e: mov BYTE PTR [rbx+0x41],0x2 */
    0xc6, 0x43, 0x20, 0x02,		      /* 14c32: mov BYTE PTR [rbx+0x20],0x2 */
    0xe8, 0xe5, 0xd9, 0x03, 0x00,	      /* 14c36: call 52620 */
    0x48, 0x89, 0xc7,			      /* 14c3b: mov rdi,rax */
    0xc6, 0x43, 0x20, 0x02,		      /* 14c3e: mov BYTE PTR [rbx+0x20],0x2 */
    0xe8, 0xd9, 0xd9, 0x03, 0x00,	      /* 14c42: call 52620 */
    0x48, 0x89, 0xc7,			      /* 14c47: mov rdi,rax */
    0xc6, 0x43, 0x20, 0x02,		      /* 14c4a: mov BYTE PTR [rbx+0x20],0x2 */
    0xe8, 0xcd, 0xd9, 0x03, 0x00,	      /* 14c4e: call 52620 */
};

/* <fix::Countdown as Future>::poll, release, 0x14e90..0x14e98: a tail jmp to countdown_step */
static const uint8_t rel_countdown_poll[] = {
    0x48, 0x8b, 0x36,		  /* 14e90: mov rsi,QWORD PTR [rsi] */
    0xe9, 0x18, 0xf7, 0xff, 0xff, /* 14e93: jmp 145b0 */
};

/* <fix::Wrap as Future>::poll, release, 0x14e00..0x14e10: `jmp rcx`, rcx from the vtable */
static const uint8_t rel_wrap_poll[] = {
    0x48, 0x8b, 0x07,	    /* 14e00: mov rax,QWORD PTR [rdi] */
    0x48, 0x8b, 0x4f, 0x08, /* 14e03: mov rcx,QWORD PTR [rdi+0x8] */
    0x48, 0x8b, 0x49, 0x18, /* 14e07: mov rcx,QWORD PTR [rcx+0x18] */
    0x48, 0x89, 0xc7,	    /* 14e0b: mov rdi,rax */
    0xff, 0xe1,		    /* 14e0e: jmp rcx */
};

/* <fix::Yield as Future>::poll, debug, 0x17110..0x17168: one ret (0x17167) */
static const uint8_t dbg_yield_poll[] = {
    0x48, 0x83, 0xec, 0x28,	  /* 17110: sub rsp,0x28 */
    0x48, 0x89, 0x74, 0x24, 0x08, /* 17114: mov QWORD PTR [rsp+0x8],rsi */
    0x48, 0x89, 0x7c, 0x24, 0x10, /* 17119: mov QWORD PTR [rsp+0x10],rdi */
    0x48, 0x89, 0x74, 0x24, 0x20, /* 1711e: mov QWORD PTR [rsp+0x20],rsi */
    0x48, 0x8d, 0x7c, 0x24, 0x10, /* 17123: lea rdi,[rsp+0x10] */
    0xe8, 0x03, 0x08, 0x00, 0x00, /* 17128: call 17930 */
    0xf6, 0x00, 0x01,		  /* 1712d: test BYTE PTR [rax],0x1 */
    0x75, 0x26,			  /* 17130: jne 17158 */
    0x48, 0x8d, 0x7c, 0x24, 0x10, /* 17132: lea rdi,[rsp+0x10] */
    0xe8, 0xf4, 0x0a, 0x00, 0x00, /* 17137: call 17c30 */
    0x48, 0x8b, 0x7c, 0x24, 0x08, /* 1713c: mov rdi,QWORD PTR [rsp+0x8] */
    0xc6, 0x00, 0x01,		  /* 17141: mov BYTE PTR [rax],0x1 */
    0xe8, 0xa7, 0xfe, 0xff, 0xff, /* 17144: call 16ff0 */
    0x48, 0x89, 0xc7,		  /* 17149: mov rdi,rax */
    0xe8, 0x4f, 0xfe, 0xff, 0xff, /* 1714c: call 16fa0 */
    0xc6, 0x44, 0x24, 0x1f, 0x01, /* 17151: mov BYTE PTR [rsp+0x1f],0x1 */
    0xeb, 0x05,			  /* 17156: jmp 1715d */
    0xc6, 0x44, 0x24, 0x1f, 0x00, /* 17158: mov BYTE PTR [rsp+0x1f],0x0 */
    0x8a, 0x44, 0x24, 0x1f,	  /* 1715d: mov al,BYTE PTR [rsp+0x1f] */
    0x24, 0x01,			  /* 17161: and al,0x1 */
    0x48, 0x83, 0xc4, 0x28,	  /* 17163: add rsp,0x28 */
    0xc3,			  /* 17167: ret */
};

/*
 * fix::leaf::{{closure}}, debug, 0x15c50..0x15dcc: two rets (0x15d77, 0x15dcb);
 * `jmp rax` at 0x15c87 follows `lea rax,[rip+X]; movsxd rcx,[rax+rcx*4]; add rax,rcx`.
 */
static const uint8_t dbg_leaf_poll[] = {
    0x48, 0x81, 0xec, 0x98, 0x00, 0x00, 0x00,	    /* 15c50: sub rsp,0x98 */
    0x48, 0x89, 0x7c, 0x24, 0x28,		    /* 15c57: mov QWORD PTR [rsp+0x28],rdi */
    0x48, 0x89, 0x74, 0x24, 0x38,		    /* 15c5c: mov QWORD PTR [rsp+0x38],rsi */
    0x48, 0x89, 0x7c, 0x24, 0x58,		    /* 15c61: mov QWORD PTR [rsp+0x58],rdi */
    0x48, 0x89, 0x7c, 0x24, 0x68,		    /* 15c66: mov QWORD PTR [rsp+0x68],rdi */
    0x0f, 0xb6, 0x47, 0x11,			    /* 15c6b: movzx eax,BYTE PTR [rdi+0x11] */
    0x48, 0x89, 0x44, 0x24, 0x30,		    /* 15c6f: mov QWORD PTR [rsp+0x30],rax */
    0x48, 0x8b, 0x4c, 0x24, 0x30,		    /* 15c74: mov rcx,QWORD PTR [rsp+0x30] */
    0x48, 0x8d, 0x05, 0xf0, 0x20, 0xff, 0xff,	    /* 15c79: lea rax,[rip+0xffffffffffff20f0] */
    0x48, 0x63, 0x0c, 0x88,			    /* 15c80: movsxd rcx,DWORD PTR [rax+rcx*4] */
    0x48, 0x01, 0xc8,				    /* 15c84: add rax,rcx */
    0xff, 0xe0,					    /* 15c87: jmp rax */
    0x0f, 0x0b,					    /* 15c89: ud2 */
    0x48, 0x8b, 0x44, 0x24, 0x28,		    /* 15c8b: mov rax,QWORD PTR [rsp+0x28] */
    0x48, 0x8b, 0x08,				    /* 15c90: mov rcx,QWORD PTR [rax] */
    0x48, 0x89, 0x48, 0x08,			    /* 15c93: mov QWORD PTR [rax+0x8],rcx */
    0x31, 0xff,					    /* 15c97: xor edi,edi */
    0xe8, 0x52, 0x14, 0x00, 0x00,		    /* 15c99: call 170f0 */
    0x88, 0x44, 0x24, 0x27,			    /* 15c9e: mov BYTE PTR [rsp+0x27],al */
    0xeb, 0x3f,					    /* 15ca2: jmp 15ce3 */
    0x31, 0xc0,					    /* 15ca4: xor eax,eax */
    0xa8, 0x01,					    /* 15ca6: test al,0x1 */
    0x75, 0xfa,					    /* 15ca8: jne 15ca4 */
    0xeb, 0x5e,					    /* 15caa: jmp 15d0a */
    0x31, 0xc0,					    /* 15cac: xor eax,eax */
    0xa8, 0x01,					    /* 15cae: test al,0x1 */
    0x75, 0xfa,					    /* 15cb0: jne 15cac */
    0xeb, 0x63,					    /* 15cb2: jmp 15d17 */
    0x48, 0x8b, 0x44, 0x24, 0x38,		    /* 15cb4: mov rax,QWORD PTR [rsp+0x38] */
    0x48, 0x89, 0x44, 0x24, 0x38,		    /* 15cb9: mov QWORD PTR [rsp+0x38],rax */
    0xeb, 0x32,					    /* 15cbe: jmp 15cf2 */
    0x48, 0x8b, 0x44, 0x24, 0x28,		    /* 15cc0: mov rax,QWORD PTR [rsp+0x28] */
    0xc6, 0x40, 0x11, 0x02,			    /* 15cc5: mov BYTE PTR [rax+0x11],0x2 */
    0x48, 0x8b, 0x7c, 0x24, 0x70,		    /* 15cc9: mov rdi,QWORD PTR [rsp+0x70] */
    0xe8, 0x1d, 0xfa, 0x03, 0x00,		    /* 15cce: call 556f0 */
    0x48, 0x89, 0xc1,				    /* 15cd3: mov rcx,rax */
    0x89, 0xd0,					    /* 15cd6: mov eax,edx */
    0x48, 0x89, 0x4c, 0x24, 0x70,		    /* 15cd8: mov QWORD PTR [rsp+0x70],rcx */
    0x89, 0x44, 0x24, 0x78,			    /* 15cdd: mov DWORD PTR [rsp+0x78],eax */
    0xeb, 0xdd,					    /* 15ce1: jmp 15cc0 */
    0x48, 0x8b, 0x44, 0x24, 0x28,		    /* 15ce3: mov rax,QWORD PTR [rsp+0x28] */
    0x8a, 0x4c, 0x24, 0x27,			    /* 15ce8: mov cl,BYTE PTR [rsp+0x27] */
    0x80, 0xe1, 0x01,				    /* 15cec: and cl,0x1 */
    0x88, 0x48, 0x10,				    /* 15cef: mov BYTE PTR [rax+0x10],cl */
    0x48, 0x8b, 0x44, 0x24, 0x28,		    /* 15cf2: mov rax,QWORD PTR [rsp+0x28] */
    0x48, 0x83, 0xc0, 0x10,			    /* 15cf7: add rax,0x10 */
    0x48, 0x89, 0x44, 0x24, 0x18,		    /* 15cfb: mov QWORD PTR [rsp+0x18],rax */
    0x48, 0x89, 0x84, 0x24, 0x90, 0x00, 0x00, 0x00, /* 15d00: mov QWORD PTR [rsp+0x90],rax */
    0xeb, 0x1a,					    /* 15d08: jmp 15d24 */
    0x48, 0x8d, 0x3d, 0x57, 0x0a, 0x04, 0x00,	    /* 15d0a: lea rdi,[rip+0x40a57] */
    0xff, 0x15, 0x21, 0x2b, 0x04, 0x00,		    /* 15d11: call QWORD PTR [rip+0x42b21] */
    0x48, 0x8d, 0x3d, 0x4a, 0x0a, 0x04, 0x00,	    /* 15d17: lea rdi,[rip+0x40a4a] */
    0xff, 0x15, 0x1c, 0x2b, 0x04, 0x00,		    /* 15d1e: call QWORD PTR [rip+0x42b1c] */
    0x48, 0x8b, 0x7c, 0x24, 0x18,		    /* 15d24: mov rdi,QWORD PTR [rsp+0x18] */
    0x48, 0x8b, 0x74, 0x24, 0x38,		    /* 15d29: mov rsi,QWORD PTR [rsp+0x38] */
    0xe8, 0xdd, 0x13, 0x00, 0x00,		    /* 15d2e: call 17110 */
    0x88, 0x44, 0x24, 0x17,			    /* 15d33: mov BYTE PTR [rsp+0x17],al */
    0xeb, 0x00,					    /* 15d37: jmp 15d39 */
    0x8a, 0x44, 0x24, 0x17,			    /* 15d39: mov al,BYTE PTR [rsp+0x17] */
    0x24, 0x01,					    /* 15d3d: and al,0x1 */
    0x88, 0x44, 0x24, 0x57,			    /* 15d3f: mov BYTE PTR [rsp+0x57],al */
    0x8a, 0x44, 0x24, 0x57,			    /* 15d43: mov al,BYTE PTR [rsp+0x57] */
    0x24, 0x01,					    /* 15d47: and al,0x1 */
    0x0f, 0xb6, 0xc0,				    /* 15d49: movzx eax,al */
    0x48, 0xa9, 0x01, 0x00, 0x00, 0x00,		    /* 15d4c: test rax,0x1 */
    0x74, 0x24,					    /* 15d52: je 15d78 */
    0x48, 0x8b, 0x44, 0x24, 0x28,		    /* 15d54: mov rax,QWORD PTR [rsp+0x28] */
    0x48, 0xc7, 0x44, 0x24, 0x40, 0x01, 0x00, 0x00, 0x00, /* 15d59: mov QWORD PTR [rsp+0x40],0x1 */
    0xc6, 0x40, 0x11, 0x03,				  /* 15d62: mov BYTE PTR [rax+0x11],0x3 */
    0x48, 0x8b, 0x44, 0x24, 0x40,			  /* 15d66: mov rax,QWORD PTR [rsp+0x40] */
    0x48, 0x8b, 0x54, 0x24, 0x48,			  /* 15d6b: mov rdx,QWORD PTR [rsp+0x48] */
    0x48, 0x81, 0xc4, 0x98, 0x00, 0x00, 0x00,		  /* 15d70: add rsp,0x98 */
    0xc3,						  /* 15d77: ret */
    0x48, 0x8b, 0x44, 0x24, 0x28,			  /* 15d78: mov rax,QWORD PTR [rsp+0x28] */
    0x48, 0x8b, 0x40, 0x08,				  /* 15d7d: mov rax,QWORD PTR [rax+0x8] */
    0x48, 0x89, 0x84, 0x24, 0x80, 0x00, 0x00, 0x00,	  /* 15d81: mov QWORD PTR [rsp+0x80],rax */
    0x48, 0xc7, 0x84, 0x24, 0x88, 0x00, 0x00, 0x00, 0x03,
    0x00, 0x00, 0x00,					  /* 15d89: mov QWORD PTR [rsp+0x88],0x3 */
    0x48, 0x6b, 0xc0, 0x03,				  /* 15d95: imul rax,rax,0x3 */
    0x48, 0x89, 0x44, 0x24, 0x08,			  /* 15d99: mov QWORD PTR [rsp+0x8],rax */
    0x48, 0x8b, 0x44, 0x24, 0x28,			  /* 15d9e: mov rax,QWORD PTR [rsp+0x28] */
    0x48, 0x8b, 0x4c, 0x24, 0x08,			  /* 15da3: mov rcx,QWORD PTR [rsp+0x8] */
    0x48, 0x89, 0x4c, 0x24, 0x48,			  /* 15da8: mov QWORD PTR [rsp+0x48],rcx */
    0x48, 0xc7, 0x44, 0x24, 0x40, 0x00, 0x00, 0x00, 0x00, /* 15dad: mov QWORD PTR [rsp+0x40],0x0 */
    0xc6, 0x40, 0x11, 0x01,				  /* 15db6: mov BYTE PTR [rax+0x11],0x1 */
    0x48, 0x8b, 0x44, 0x24, 0x40,			  /* 15dba: mov rax,QWORD PTR [rsp+0x40] */
    0x48, 0x8b, 0x54, 0x24, 0x48,			  /* 15dbf: mov rdx,QWORD PTR [rsp+0x48] */
    0x48, 0x81, 0xc4, 0x98, 0x00, 0x00, 0x00,		  /* 15dc4: add rsp,0x98 */
    0xc3,						  /* 15dcb: ret */
};

/* ---- harness ---- */

struct result {
	int rc;
	struct exit_site *exits;
	uint32_t nr_exits;
	struct entry_site entry;
	char err[256];
};

static struct result analyze(const uint8_t *code, size_t size, uint64_t addr, uint16_t self_reg)
{
	struct result r;

	memset(&r, 0x5a, sizeof(r)); /* everything must be written */
	r.rc = disasm__analyze_function(code, size, addr, self_reg, &r.exits, &r.nr_exits, &r.entry,
					r.err, sizeof(r.err));
	if (r.rc)
		CHECK(r.err[0] != '\0');
	else
		CHECK_STR(r.err, "");
	if (r.rc) {
		CHECK(r.exits == NULL);
		CHECK_EQ_U64(r.nr_exits, 0);
		CHECK(!r.entry.valid);
	}
	CHECK((r.exits == NULL) == (r.nr_exits == 0));
	return r;
}

#define ANALYZE(code, self_reg) analyze(code, sizeof(code), BASE, self_reg)

#define CHECK_EXIT(r, i, kind_, addr_, target_)                                                    \
	do {                                                                                       \
		CHECK((i) < (r).nr_exits);                                                         \
		if ((i) < (r).nr_exits) {                                                          \
			CHECK_EQ_U64((r).exits[i].kind, kind_);                                    \
			CHECK_EQ_U64((r).exits[i].addr, addr_);                                    \
			CHECK_EQ_U64((r).exits[i].target, target_);                                \
			CHECK_EQ_U64((r).exits[i].file_offset, 0);                                 \
		}                                                                                  \
	} while (0)

#define CHECK_ENTRY_REG(r, addr_, emulated_, sp_delta_, reg_)                                      \
	do {                                                                                       \
		CHECK((r).entry.valid);                                                            \
		CHECK_EQ_U64((r).entry.addr, addr_);                                               \
		CHECK_EQ_U64((r).entry.emulated, emulated_);                                       \
		CHECK_EQ_I64((r).entry.sp_delta, sp_delta_);                                       \
		CHECK_EQ_U64((r).entry.self_kind, SELF_LOC_REG);                                   \
		CHECK_EQ_U64((r).entry.self_reg, reg_);                                            \
		CHECK_EQ_U64((r).entry.file_offset, 0);                                            \
	} while (0)

#define CHECK_ENTRY_STACK(r, addr_, emulated_, sp_delta_, offset_)                                 \
	do {                                                                                       \
		CHECK((r).entry.valid);                                                            \
		CHECK_EQ_U64((r).entry.addr, addr_);                                               \
		CHECK_EQ_U64((r).entry.emulated, emulated_);                                       \
		CHECK_EQ_I64((r).entry.sp_delta, sp_delta_);                                       \
		CHECK_EQ_U64((r).entry.self_kind, SELF_LOC_STACK);                                 \
		CHECK_EQ_I64((r).entry.self_sp_offset, offset_);                                   \
	} while (0)

static void result_free(struct result *r)
{
	free(r->exits);
	r->exits = NULL;
}

/* ---- exits ---- */

static void test_ret(void)
{
	struct result r = ANALYZE(ret_only, DWARF_REG_RDI);

	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_RET, BASE, 0);
	/* the only instruction is the ret: single-stepped, but it is the entry too */
	CHECK_ENTRY_REG(r, BASE, false, 0, DWARF_REG_RDI);
	CHECK_STR(r.entry.insn, "ret");
	result_free(&r);

	r = ANALYZE(ret_imm16, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_RET, 0x401003, 0);
	result_free(&r);
}

static void test_tail_jmp(void)
{
	struct result r = ANALYZE(tail_jmp, DWARF_REG_RDI);

	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_TAIL_JMP, 0x401005, 0x401027);
	CHECK_ENTRY_REG(r, BASE, true, 0, DWARF_REG_RDI);
	CHECK_STR(r.entry.insn, "push rbx");
	result_free(&r);

	/* a tail-call thunk: its only instruction is the exit, and the entry */
	r = ANALYZE(entry_thunk, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_TAIL_JMP, BASE, 0x401012);
	CHECK_ENTRY_REG(r, BASE, false, 0, DWARF_REG_RDI);
	result_free(&r);
}

static void test_jmp_inside(void)
{
	struct result r = ANALYZE(jmp_inside, DWARF_REG_RDI);

	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_RET, 0x40100d, 0);
	result_free(&r);
}

static void test_jcc_out(void)
{
	struct result r = ANALYZE(jcc_out, DWARF_REG_RDI);

	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 2);
	CHECK_EXIT(r, 0, EXIT_TAIL_JMP, 0x401003, 0x40104b);
	CHECK_EXIT(r, 1, EXIT_RET, 0x40100a, 0);
	/* the je is emulated but is an exit: entry and exit never share a site by choice */
	CHECK_ENTRY_REG(r, BASE, false, 0, DWARF_REG_RDI);
	result_free(&r);
}

static void test_jump_tables(void)
{
	struct result r = ANALYZE(jump_table, DWARF_REG_RDI);

	/* lea/movsxd/add/notrack jmp with a mov interleaved: only the ret leaves */
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_RET, 0x401023, 0);
	result_free(&r);

	/* opt-level=0 shape: add base, entry */
	r = ANALYZE(jump_table_reversed, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 2);
	CHECK_EXIT(r, 0, EXIT_RET, 0x40102b, 0);
	CHECK_EXIT(r, 1, EXIT_RET, 0x401032, 0);
	result_free(&r);

	/* the lea hoisted out of a loop: the dispatch block starts at a branch target */
	r = ANALYZE(jump_table_hoisted, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_RET, 0x40101b, 0);
	/* lea, xor, then the loop head: no emulated instruction before it */
	CHECK_ENTRY_REG(r, BASE, false, 0, DWARF_REG_RDI);
	result_free(&r);

	/* the base is overwritten between load and add: not a table, an exit */
	r = ANALYZE(jump_table_clobbered, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_TAIL_JMP_INDIRECT, 0x401011, 0);
	result_free(&r);

	/* the base came from memory in this block, not from a lea: not a table we know */
	r = ANALYZE(jump_table_base_from_memory, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_TAIL_JMP_INDIRECT, 0x40100a, 0);
	result_free(&r);

	/* non-PIC: jmp [table + rax*8] */
	r = ANALYZE(jmp_table_nonpic, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_RET, 0x40100a, 0);
	result_free(&r);
}

static void test_indirect_jmp(void)
{
	/* a vtable tail call */
	struct result r = ANALYZE(jmp_indirect_mem, DWARF_REG_RDI);

	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_TAIL_JMP_INDIRECT, 0x401007, 0);
	result_free(&r);
}

/* An exit the kernel refuses to probe is still an exit, flagged unprobeable:
 * uprobe_init_insn() rejects the DS (0x3e, "notrack") prefix. */
static void test_unprobeable_exit(void)
{
	static const uint8_t code[] = {
	    0x48, 0x8b, 0x07, /* mov rax, [rdi] */
	    0x3e, 0xff, 0xe0, /* notrack jmp rax: a tail call through a pointer */
	};
	struct result r = analyze(code, sizeof(code), 0x401000, DWARF_REG_RDI);

	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	if (r.nr_exits == 1) {
		CHECK_EQ_U64(r.exits[0].kind, EXIT_TAIL_JMP_INDIRECT);
		CHECK(!r.exits[0].probeable);
	}
	result_free(&r);

	static const uint8_t ret[] = {0xc3};
	r = analyze(ret, sizeof(ret), 0x401000, DWARF_REG_RDI);
	CHECK_EQ_U64(r.nr_exits, 1);
	if (r.nr_exits == 1)
		CHECK(r.exits[0].probeable);
	result_free(&r);
}

/* ---- entry sites ---- */

static void test_entry_push_first(void)
{
	struct result r = ANALYZE(entry_push_first, DWARF_REG_RDI);

	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_REG(r, BASE, true, 0, DWARF_REG_RDI);
	CHECK_STR(r.entry.insn, "push rbp");
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_RET, 0x401018, 0);
	result_free(&r);
}

static void test_entry_sub_then_call(void)
{
	struct result r = ANALYZE(entry_sub_then_call, DWARF_REG_RDI);

	/* sub, two stores, lea rdi (self leaves rdi): the call, self at [rsp+0x50] */
	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_STACK(r, 0x401013, true, -0x58, 0x50);
	CHECK_STR(r.entry.insn, "call 0x40101d");
	result_free(&r);
}

static void test_entry_sret(void)
{
	/* self arrives in rsi (rdi is the return slot), is copied to rcx, rsi is zeroed */
	struct result r = ANALYZE(entry_sret, DWARF_REG_RSI);

	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_REG(r, 0x401008, true, 0, DWARF_REG_RCX);

	/* self in rsi and a push first: the push, self still in rsi */
	result_free(&r);
	r = ANALYZE(tail_jmp, DWARF_REG_RSI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_REG(r, BASE, true, 0, DWARF_REG_RSI);
	result_free(&r);
}

static void test_entry_fallbacks(void)
{
	/* self clobbered before the first emulated instruction */
	struct result r = ANALYZE(entry_clobbered, DWARF_REG_RDI);

	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_REG(r, BASE, false, 0, DWARF_REG_RDI);
	CHECK_STR(r.entry.insn, "mov rdi, qword ptr [rdi]");
	result_free(&r);

	/* the push sits in a loop body: a probe there would fire on every iteration */
	r = ANALYZE(entry_loop_head, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_REG(r, BASE, false, 0, DWARF_REG_RDI);
	result_free(&r);

	/* and rsp: after it rsp is no longer a known distance from the entry */
	r = ANALYZE(entry_sp_unknown, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_REG(r, BASE, false, 0, DWARF_REG_RDI);
	result_free(&r);
}

static void test_entry_stack_slots(void)
{
	/* a 4-byte store into the upper half of self's slot */
	struct result r = ANALYZE(entry_slot_overwritten, DWARF_REG_RDI);

	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_REG(r, BASE, false, 0, DWARF_REG_RDI);
	result_free(&r);

	/* stores next to the slot leave it alone (movups: Capstone 4 calls it a read) */
	r = ANALYZE(entry_slot_kept, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_STACK(r, 0x401018, true, -0x20, 8);
	result_free(&r);

	/* a store through rax = rsp lands on the slot */
	r = ANALYZE(entry_slot_via_pointer, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_REG(r, BASE, false, 0, DWARF_REG_RDI);
	result_free(&r);

	/* rax = rsp + rdx is a stack address we cannot follow: [rcx] may be the slot */
	r = ANALYZE(entry_stack_escaped, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_REG(r, BASE, false, 0, DWARF_REG_RDI);
	result_free(&r);

	/* no stack address escaped: a store through rcx cannot hit our fresh frame */
	r = ANALYZE(entry_stack_not_escaped, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_STACK(r, 0x401016, true, -0x20, 8);
	result_free(&r);

	/* stored, then popped into rsi */
	r = ANALYZE(entry_pop_self, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_REG(r, 0x40100b, true, 0, DWARF_REG_RSI);
	result_free(&r);
}

static void test_entry_nops(void)
{
	/* the kernel's own 5-byte NOP: emulated since v6.16 */
	struct result r = ANALYZE(entry_nop5, DWARF_REG_RDI);

	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_REG(r, BASE, true, 0, DWARF_REG_RDI);
	result_free(&r);

	/* a NOPL that is not byte-for-byte one of x86_nops[]: single-stepped before v6.19 */
	r = ANALYZE(entry_nop4_noncanonical, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_REG(r, BASE, false, 0, DWARF_REG_RDI);
	result_free(&r);

	/* CET: endbr64 is single-stepped, the push after it is emulated */
	r = ANALYZE(entry_endbr64, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_REG(r, 0x401004, true, 0, DWARF_REG_RDI);
	result_free(&r);

	/* nothing the kernel lets us probe: no entry site at all */
	r = ANALYZE(entry_ud2_only, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 0);
	CHECK(r.exits == NULL);
	CHECK(!r.entry.valid);
	result_free(&r);

	/* a CS prefix: the kernel refuses the probe outright, so the site moves on */
	r = ANALYZE(entry_cs_nop, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_ENTRY_REG(r, 0x401006, false, 0, DWARF_REG_RDI);
	result_free(&r);
}

/* ---- errors and hostile input ---- */

static void test_errors(void)
{
	static const uint8_t invalid[] = {0x06, 0x07, 0x0e, 0x16}; /* gone in 64-bit mode */
	static const uint8_t truncated[] = {0x53, 0x48, 0x8b};	   /* push rbx; mov r64, ... */
	static const uint8_t ret[] = {0xc3};
	struct result r = ANALYZE(invalid, DWARF_REG_RDI);

	CHECK_EQ_I64(r.rc, -EINVAL);
	CHECK(strstr(r.err, "decode failed at 0x401000") != NULL);

	r = ANALYZE(truncated, DWARF_REG_RDI);
	CHECK_EQ_I64(r.rc, -EINVAL);
	CHECK(strstr(r.err, "decode failed at 0x401001") != NULL);
	CHECK(strstr(r.err, "past the end") != NULL);

	r = ANALYZE(branch_into_insn, DWARF_REG_RDI);
	CHECK_EQ_I64(r.rc, -EINVAL);
	CHECK(strstr(r.err, "0x401003") != NULL);

	r = analyze(ret, 0, BASE, DWARF_REG_RDI);
	CHECK_EQ_I64(r.rc, -EINVAL);
	r = analyze(NULL, 1, BASE, DWARF_REG_RDI);
	CHECK_EQ_I64(r.rc, -EINVAL);
	r = analyze(ret, sizeof(ret), BASE, DWARF_REG_RSP);
	CHECK_EQ_I64(r.rc, -EINVAL);
	r = analyze(ret, sizeof(ret), BASE, 16);
	CHECK_EQ_I64(r.rc, -EINVAL);
	r = analyze(ret, sizeof(ret), UINT64_MAX, DWARF_REG_RDI);
	CHECK_EQ_I64(r.rc, -EINVAL);

	/* no err buffer at all */
	{
		struct exit_site *exits = NULL;
		struct entry_site entry;
		uint32_t nr = 1;

		CHECK_EQ_I64(disasm__analyze_function(invalid, sizeof(invalid), BASE, 5, &exits,
						      &nr, &entry, NULL, 0),
			     -EINVAL);
		CHECK(exits == NULL && nr == 0);
	}
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Garbage: no crash, no leak; success or -EINVAL; results inside the function. */
static void test_garbage(void)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	uint8_t buf[64];
	unsigned ok = 0, rejected = 0, bad = 0;

	for (int i = 0; i < 5000; i++) {
		size_t len = 1 + xorshift(&seed) % sizeof(buf);
		struct exit_site *exits;
		struct entry_site entry;
		uint32_t nr;
		char err[128];
		int rc;

		for (size_t j = 0; j < len; j++)
			buf[j] = (uint8_t)xorshift(&seed);
		rc = disasm__analyze_function(buf, len, BASE, (uint16_t)(i % 7), &exits, &nr,
					      &entry, err, sizeof(err));
		if (rc == 0) {
			ok++;
			for (uint32_t k = 0; k < nr; k++)
				bad += exits[k].addr < BASE || exits[k].addr >= BASE + len;
			bad += entry.valid && (entry.addr < BASE || entry.addr >= BASE + len);
		} else if (rc == -EINVAL) {
			rejected++;
			bad += exits != NULL || nr != 0 || entry.valid;
		} else {
			bad++;
		}
		free(exits);
	}
	CHECK_EQ_U64(bad, 0);
	CHECK(ok > 0);
	CHECK(rejected > 0);
}

/* ---- real Rust functions ---- */

static void test_rust_release(void)
{
	struct result r = analyze(rel_middle_poll, sizeof(rel_middle_poll), 0x149b0, DWARF_REG_RDI);

	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_RET, 0x14bb8, 0);
	CHECK_ENTRY_REG(r, 0x149b0, true, 0, DWARF_REG_RDI);
	CHECK_STR(r.entry.insn, "push r15");
	result_free(&r);

	/* <Countdown as Future>::poll: `mov rsi,[rsi]; jmp countdown_step` */
	r = analyze(rel_countdown_poll, sizeof(rel_countdown_poll), 0x14e90, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_TAIL_JMP, 0x14e93, 0x145b0);
	CHECK_ENTRY_REG(r, 0x14e90, false, 0, DWARF_REG_RDI);
	CHECK_STR(r.entry.insn, "mov rsi, qword ptr [rsi]");
	result_free(&r);

	/* <Wrap as Future>::poll: the inner future's poll through its vtable */
	r = analyze(rel_wrap_poll, sizeof(rel_wrap_poll), 0x14e00, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_TAIL_JMP_INDIRECT, 0x14e0e, 0);
	CHECK_ENTRY_REG(r, 0x14e00, false, 0, DWARF_REG_RDI);
	result_free(&r);
}

static void test_rust_debug(void)
{
	struct result r = analyze(dbg_yield_poll, sizeof(dbg_yield_poll), 0x17110, DWARF_REG_RDI);

	/* sub rsp,0x28; self stored at [rsp+0x10]; rdi = &self; call deref */
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 1);
	CHECK_EXIT(r, 0, EXIT_RET, 0x17167, 0);
	CHECK_ENTRY_STACK(r, 0x17128, true, -0x28, 0x10);
	result_free(&r);

	/* the entry block ends in the state jump table: nothing emulated before it */
	r = analyze(dbg_leaf_poll, sizeof(dbg_leaf_poll), 0x15c50, DWARF_REG_RDI);
	CHECK_EQ_U64(r.rc, 0);
	CHECK_EQ_U64(r.nr_exits, 2);
	CHECK_EXIT(r, 0, EXIT_RET, 0x15d77, 0);
	CHECK_EXIT(r, 1, EXIT_RET, 0x15dcb, 0);
	CHECK_ENTRY_REG(r, 0x15c50, false, 0, DWARF_REG_RDI);
	CHECK_STR(r.entry.insn, "sub rsp, 0x98");
	result_free(&r);
}

/*
 * Capstone 4 says the accumulator forms of test (a8 ib, a9 id) write al/eax/rax;
 * test, cmp and bt write the flags only (insn.c). Bytes from GNU as:
 *   a8 01                  test al,0x1
 *   48 a9 01 00 00 00      test rax,0x1
 *   3c 01                  cmp al,0x1
 *   84 c0                  test al,al
 *   89 c5                  mov ebp,eax
 */
static void test_flags_only(void)
{
	static const uint8_t code[] = {0xa8, 0x01, 0x48, 0xa9, 0x01, 0x00, 0x00,
				       0x00, 0x3c, 0x01, 0x84, 0xc0, 0x89, 0xc5};
	struct insn_seq seq;
	char err[128];

	CHECK_EQ_I64(insn__decode(code, sizeof(code), BASE, &seq, err, sizeof(err)), 0);
	CHECK_EQ_U64(seq.nr, 5);
	for (uint32_t i = 0; i < 4 && i < seq.nr; i++) {
		CHECK(seq.insns[i].regs_known);
		CHECK_EQ_U64(seq.insns[i].gpr_written, 0);
		CHECK(seq.insns[i].gpr_read & (1u << DWARF_REG_RAX));
	}
	if (seq.nr == 5)
		CHECK_EQ_U64(seq.insns[4].gpr_written, 1u << DWARF_REG_RBP);
	insn_seq__free(&seq);
}

static void test_reg_names(void)
{
	CHECK_STR(disasm__reg_name(DWARF_REG_RAX), "rax");
	CHECK_STR(disasm__reg_name(DWARF_REG_RDX), "rdx");
	CHECK_STR(disasm__reg_name(DWARF_REG_RSI), "rsi");
	CHECK_STR(disasm__reg_name(DWARF_REG_RDI), "rdi");
	CHECK_STR(disasm__reg_name(DWARF_REG_RSP), "rsp");
	CHECK_STR(disasm__reg_name(8), "r8");
	CHECK_STR(disasm__reg_name(15), "r15");
	CHECK_STR(disasm__reg_name(16), "rip");
	CHECK_STR(disasm__reg_name(17), "?");
	CHECK_STR(disasm__reg_name(UINT16_MAX), "?");
}

int main(void)
{
	test_ret();
	test_tail_jmp();
	test_jmp_inside();
	test_jcc_out();
	test_jump_tables();
	test_indirect_jmp();
	test_unprobeable_exit();
	test_entry_push_first();
	test_entry_sub_then_call();
	test_entry_sret();
	test_entry_fallbacks();
	test_entry_stack_slots();
	test_entry_nops();
	test_errors();
	test_garbage();
	test_rust_release();
	test_rust_debug();
	test_reg_names();
	test_flags_only();
	TEST_MAIN_END();
}

/*
 * The Rust fixture (fix.rs):
 *
 * // Fixture for asyncbpf's disasm unit test (tests/unit/test_disasm.c).
 * // rustc 1.95.0 --edition 2021 -g -C opt-level=0|3
 * use std::future::Future;
 * use std::pin::Pin;
 * use std::sync::Arc;
 * use std::task::{Context, Poll, Wake, Waker};
 *
 * struct Yield(bool);
 * impl Future for Yield {
 *     type Output = ();
 *     fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
 *         if self.0 {
 *             Poll::Ready(())
 *         } else {
 *             self.0 = true;
 *             cx.waker().wake_by_ref();
 *             Poll::Pending
 *         }
 *     }
 * }
 *
 * #[inline(never)]
 * async fn leaf(x: u64) -> u64 {
 *     Yield(false).await;
 *     x.wrapping_mul(3)
 * }
 *
 * #[inline(never)]
 * async fn middle(n: u64) -> u64 {
 *     let mut acc = 0u64;
 *     for i in 0..n {
 *         acc = acc.wrapping_add(leaf(i).await);
 *         Yield(false).await;
 *         if acc % 7 == 3 {
 *             acc ^= leaf(acc).await;
 *         }
 *     }
 *     acc
 * }
 *
 * // poll tail-calls the inner future's poll through its vtable
 * struct Wrap(Pin<Box<dyn Future<Output = u64>>>);
 * impl Future for Wrap {
 *     type Output = u64;
 *     fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
 *         self.0.as_mut().poll(cx)
 *     }
 * }
 *
 * // poll tail-calls a plain function
 * struct Countdown(u64);
 * #[inline(never)]
 * fn countdown_step(n: &mut u64, cx: &mut Context<'_>) -> Poll<u64> {
 *     if *n == 0 {
 *         Poll::Ready(42)
 *     } else {
 *         *n -= 1;
 *         cx.waker().wake_by_ref();
 *         Poll::Pending
 *     }
 * }
 * impl Future for Countdown {
 *     type Output = u64;
 *     fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
 *         countdown_step(&mut self.0, cx)
 *     }
 * }
 *
 * struct Noop;
 * impl Wake for Noop {
 *     fn wake(self: Arc<Self>) {}
 * }
 *
 * fn run(mut fut: Pin<Box<dyn Future<Output = u64>>>) -> u64 {
 *     let waker = Waker::from(Arc::new(Noop));
 *     let mut cx = Context::from_waker(&waker);
 *     loop {
 *         if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
 *             return v;
 *         }
 *     }
 * }
 *
 * fn main() {
 *     let n: u64 = std::env::args().count() as u64 + 4;
 *     let a = run(Box::pin(Wrap(Box::pin(middle(std::hint::black_box(n))))));
 *     let b = run(Box::pin(Countdown(std::hint::black_box(n))));
 *     println!("{} {}", a, b);
 * }
 */
