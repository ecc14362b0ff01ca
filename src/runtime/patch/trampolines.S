/* The runtime's trampolines (patch.h): the common entry of the GOT stubs,
   __fentry__ and mcount (-pg, -pg -mfentry, and -mnop-mcount nops after a
   prologue), the return trampoline every replaced return address points to,
   and the entry and return of the stubs patchable entries jump to.

   An entry keeps every register a call may pass arguments in (rdi, rsi, rdx,
   rcx, r8, r9, xmm0-7, al for variadic calls, r10 for a static chain) and the
   stack as it was, so that arguments on the stack are where the callee
   expects them. The return keeps rax, rdx, xmm0 and xmm1 (and st0/st1: the
   C++ it calls uses no x87). */

  .macro SAVE_GPRS
  pushq %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  movq %rsp, %rbp
  .cfi_def_cfa_register %rbp
  andq $-16, %rsp
  subq $192, %rsp
  movq %rdi, 0(%rsp)
  movq %rsi, 8(%rsp)
  movq %rdx, 16(%rsp)
  movq %rcx, 24(%rsp)
  movq %r8, 32(%rsp)
  movq %r9, 40(%rsp)
  movq %rax, 48(%rsp)
  movq %r10, 56(%rsp)
  .endm

  .macro SAVE_XMMS
  movdqa %xmm0, 64(%rsp)
  movdqa %xmm1, 80(%rsp)
  movdqa %xmm2, 96(%rsp)
  movdqa %xmm3, 112(%rsp)
  movdqa %xmm4, 128(%rsp)
  movdqa %xmm5, 144(%rsp)
  movdqa %xmm6, 160(%rsp)
  movdqa %xmm7, 176(%rsp)
  .endm

  .macro SAVE_ARGS
  SAVE_GPRS
  SAVE_XMMS
  .endm

  .macro RESTORE_XMMS
  movdqa 64(%rsp), %xmm0
  movdqa 80(%rsp), %xmm1
  movdqa 96(%rsp), %xmm2
  movdqa 112(%rsp), %xmm3
  movdqa 128(%rsp), %xmm4
  movdqa 144(%rsp), %xmm5
  movdqa 160(%rsp), %xmm6
  movdqa 176(%rsp), %xmm7
  .endm

  .macro RESTORE_GPRS
  movq 0(%rsp), %rdi
  movq 8(%rsp), %rsi
  movq 16(%rsp), %rdx
  movq 24(%rsp), %rcx
  movq 32(%rsp), %r8
  movq 40(%rsp), %r9
  movq 48(%rsp), %rax
  movq 56(%rsp), %r10
  movq %rbp, %rsp
  popq %rbp
  .cfi_def_cfa %rsp, 8
  .endm

  .macro RESTORE_ARGS
  RESTORE_XMMS
  RESTORE_GPRS
  .endm

/* A return: records the exit of the call whose return address was in the
   word below rsp; r11 is where it returns (no value is returned in r11). */
  .macro RECORD_RETURN
  pushq %rbp
  movq %rsp, %rbp
  andq $-16, %rsp
  subq $48, %rsp
  movq %rax, 0(%rsp)
  movq %rdx, 8(%rsp)
  movdqa %xmm0, 16(%rsp)
  movdqa %xmm1, 32(%rsp)
  leaq 8(%rbp), %rdi
  call callscope_rt_lib_exit
  movq %rax, %r11
  movq 0(%rsp), %rax
  movq 8(%rsp), %rdx
  movdqa 16(%rsp), %xmm0
  movdqa 32(%rsp), %xmm1
  movq %rbp, %rsp
  popq %rbp
  .endm

  .text

/* A GOT stub jumped here with its hook's index in r11d; [rsp] is the
   caller's return address. Goes on to the hook's target. */
  .p2align 4
  .globl callscope_rt_lib_entry
  .hidden callscope_rt_lib_entry
  .type callscope_rt_lib_entry, @function
callscope_rt_lib_entry:
  .cfi_startproc
  SAVE_ARGS
  movl %r11d, %edi
  leaq 8(%rbp), %rsi
  call callscope_rt_lib_enter
  movq %rax, %r11
  RESTORE_ARGS
  jmp *%r11
  .cfi_endproc
  .size callscope_rt_lib_entry, .-callscope_rt_lib_entry

/* -pg -mfentry: the first instruction of a function calls __fentry__ (after
   endbr64 under -fcf-protection): [rsp] is the address after that call,
   [rsp+8] the function's return address. */
  .p2align 4
  .globl __fentry__
  .type __fentry__, @function
__fentry__:
  .cfi_startproc
  SAVE_ARGS
  movq 8(%rbp), %rdi
  leaq 16(%rbp), %rsi
  call callscope_rt_fentry_enter
  RESTORE_ARGS
  ret
  .cfi_endproc
  .size __fentry__, .-__fentry__

/* -pg: a function calls mcount after its prologue has set up its frame
   pointer: [rsp] is the address after the call, the function's return
   address is at rbp + 8. */
  .p2align 4
  .globl mcount
  .type mcount, @function
  .globl _mcount
  .type _mcount, @function
  /* Our own name for it, which nothing interposes (under attach, libc's
     mcount comes first in every scope): what code.cpp patches calls to. */
  .globl callscope_rt_mcount
  .hidden callscope_rt_mcount
mcount:
_mcount:
callscope_rt_mcount:
  .cfi_startproc
  SAVE_ARGS
  movq 8(%rbp), %rdi
  movq 0(%rbp), %rsi
  addq $8, %rsi
  call callscope_rt_mcount_enter
  RESTORE_ARGS
  ret
  .cfi_endproc
  .size mcount, .-mcount
  .size _mcount, .-_mcount

/* A patchable entry, while tracing is on, jumps to its stub (code.cpp):
       call callscope_rt_stub_pre   (through the module's near page)
       call <the function's body>   (the 5 bytes after the entry)
       jmp  callscope_rt_stub_post
   stub_pre records the entry, takes the caller's return address off the
   stack (kept on the thread's return stack) and returns into the stub, which
   calls the body: the body returns into the stub, and stub_post returns to
   the caller with a `ret`. Every return goes where the processor's
   return-stack buffer predicts, unlike a replaced return address. Entered
   with [rsp] the stub's second call, [rsp+8] the caller's return address. */
  .p2align 4
  .globl callscope_rt_stub_pre
  .hidden callscope_rt_stub_pre
  .type callscope_rt_stub_pre, @function
callscope_rt_stub_pre:
  .cfi_startproc
  SAVE_GPRS
  movq 8(%rbp), %rdi
  leaq 16(%rbp), %rsi
  call callscope_rt_stub_enter_fast  /* touches no vector register (stub_fast.cpp) */
  testq %rax, %rax
  jnz 2f
  .cfi_remember_state
  RESTORE_GPRS
  ret $8
2: /* The full entry, or the rest of the fast one: every register saved. */
  .cfi_restore_state
  SAVE_XMMS
  movq 8(%rbp), %rdi
  leaq 16(%rbp), %rsi
  cmpq $1, %rax
  jne 3f
  call callscope_rt_stub_enter
  jmp 4f
3:
  call callscope_rt_stub_enter_resume
  xorl %eax, %eax
4:
  movq %rax, %r11
  RESTORE_ARGS
  testq %r11, %r11
  jnz 1f
  ret $8
1: /* Unrecorded: on to the body, the caller's return address in place. */
  addq $8, %rsp
  jmp *%r11
  .cfi_endproc
  .size callscope_rt_stub_pre, .-callscope_rt_stub_pre

/* The body returned into the stub, which jumped here: rsp is one word above
   the slot the caller's return address was in. */
  .p2align 4
  .globl callscope_rt_stub_post
  .hidden callscope_rt_stub_post
  .type callscope_rt_stub_post, @function
callscope_rt_stub_post:
  RECORD_RETURN
  pushq %r11
  ret
  .size callscope_rt_stub_post, .-callscope_rt_stub_post

/* A replaced return address points here: rsp is one word above the slot it
   was in. We go on to the original address with an indirect jump, not a
   return: the function's own return to us was mispredicted already (the
   return-stack buffer held the original address), and a `ret` here would
   pop the entry of the caller's caller, and mispredict every return above.
   r11 is free at a return (no value is returned in it). The byte before
   belongs to no function: an unwinder that finds our address as a return
   address looks up the address before it and finds no rules there (a
   backtrace ends, instead of reading garbage). */
  .p2align 4
  nop
  .globl callscope_rt_lib_return
  .hidden callscope_rt_lib_return
  .type callscope_rt_lib_return, @function
callscope_rt_lib_return:
  RECORD_RETURN
  jmp *%r11
  .size callscope_rt_lib_return, .-callscope_rt_lib_return

  .section .note.GNU-stack,"",@progbits
