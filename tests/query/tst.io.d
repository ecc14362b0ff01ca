/* trace: kernel_io.txt */
/*
 * The io provider (record --events io): start and done of the block
 * requests a thread began, with dtrace's bufinfo_t (args[0]), devinfo_t
 * (args[1]) and fileinfo_t (args[2]: a block request's file is not known,
 * "<unknown>" as dtrace says it).  done fires in the thread that began
 * the request, with its bytes and flags, B_DONE, and B_ERROR and the errno
 * for one that failed.  The Dynamic Tracing Guide's bytes-by-device table.
 */
#pragma D option quiet

io:::start
{
	printf("%d start %s %d bytes at %d on %s (%d,%d) %s %s\n", tid, args[0]->b_flags & B_READ ? "read" : "write",
	    args[0]->b_bcount, args[0]->b_blkno, args[1]->dev_statname, args[1]->dev_major, args[1]->dev_minor,
	    args[2]->fi_pathname, stringof(args[1]->dev_name));
}

io:::done
{
	printf("%d done %d bytes flags %x error %d edev %d\n", tid, args[0]->b_bcount, args[0]->b_flags,
	    args[0]->b_error, args[0]->b_edev);
}

io:::start
{
	@bytes[args[1]->dev_statname, args[0]->b_flags & B_READ ? "R" : "W"] = sum(args[0]->b_bcount);
}
