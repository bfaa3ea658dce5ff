/**
 * The shared data folder for tests: ../shared/data beside the repository (HumanEval-X JS,
 * HumanEval Python), read in place and never copied into the project; CODERL_DATA overrides it.
 */
import { join } from 'node:path';

export const SHARED_DATA = process.env.CODERL_DATA ?? join(import.meta.dirname, '../../../shared/data');
