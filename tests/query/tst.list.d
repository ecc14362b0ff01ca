/* args: -l */
/* -l with a script: the probes its clauses match, in dtrace's layout. */
pid$target:a.out:[lp]*:entry, proc:::exit
{
}
