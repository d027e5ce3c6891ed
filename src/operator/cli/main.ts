#!/usr/bin/env node
/** The pgfsm command line as shipped: the operator's commands only (the tools wing adds its own). */
import { operatorProgram } from './program.ts';

await operatorProgram().parseAsync(process.argv);
