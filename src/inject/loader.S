/* The code a new thread of the target runs to load a library
   (inject/load.cpp copies these bytes into the target; position-independent:
   everything it uses is in the data block whose address it is given).

   loader(data): pthread_detach(pthread_self()); names itself (prctl
   PR_SET_NAME) when a name is given; h = dlopen(path, RTLD_NOW);
   then, if an entry is named, dlsym(h, entry)(arg). Writes the handle, the
   entry's result, dlerror()'s text on failure (copied), and last the state
   (1: done, 2: dlopen failed, 3: no such entry). The data block's layout is
   load.cpp's LoaderData. */
  .section .rodata
  .globl callscope_inject_loader
  .hidden callscope_inject_loader
  .globl callscope_inject_loader_end
  .hidden callscope_inject_loader_end
  .p2align 4
callscope_inject_loader:
  pushq %rbx
  movq %rdi, %rbx
  call *96(%rbx)          /* pthread_self */
  movq %rax, %rdi
  call *104(%rbx)         /* pthread_detach */
  movq 88(%rbx), %rsi     /* the thread's name, if any: prctl(PR_SET_NAME, name) */
  testq %rsi, %rsi
  jz 0f
  movl $15, %edi
  movl $157, %eax         /* SYS_prctl */
  syscall
0:
  movq 64(%rbx), %rdi     /* path */
  movl $2, %esi           /* RTLD_NOW */
  call *0(%rbx)           /* dlopen */
  movq %rax, 24(%rbx)
  testq %rax, %rax
  jz 2f
  movq 72(%rbx), %rsi     /* entry name */
  testq %rsi, %rsi
  jz 1f
  movq %rax, %rdi
  call *8(%rbx)           /* dlsym */
  testq %rax, %rax
  jz 3f
  movq 80(%rbx), %rdi     /* entry argument */
  call *%rax
  movq %rax, 32(%rbx)
1:
  movl $1, %eax
  jmp 4f
2:
  movl $2, 44(%rbx)
  jmp 5f
3:
  movl $3, 44(%rbx)
5:
  /* dlerror()'s text, copied into the block at 2048 (up to 2047 bytes):
     its own buffer is freed when this thread ends. */
  call *16(%rbx)          /* dlerror */
  leaq 2048(%rbx), %rdi
  testq %rax, %rax
  jz 7f
  movl $2047, %ecx
6:
  movb (%rax), %dl
  testb %dl, %dl
  jz 7f
  movb %dl, (%rdi)
  incq %rax
  incq %rdi
  decl %ecx
  jnz 6b
7:
  movb $0, (%rdi)
  movl 44(%rbx), %eax
4:
  movl %eax, 40(%rbx)     /* last: the loader is done with the block */
  xorl %eax, %eax
  popq %rbx
  ret
callscope_inject_loader_end:

  .section .note.GNU-stack,"",@progbits
