/* trace: memory.txt */
/* The alloc provider (record --memory): a probe per allocating or freeing
 * function, arg0 the block, arg1 the size (0 for a free), the call path
 * of the thread that allocated. */
alloc:::malloc,alloc:::new*,alloc:::realloc,alloc:::mmap
{
	@bytes[probename] = sum(arg1);
	@where[probename, ustack()] = count();
}

alloc:::free,alloc:::realloc-free
{
	printf("%s %x in %s\n", probename, arg0, execname);
}

alloc:::
{
	@all = count();
}
