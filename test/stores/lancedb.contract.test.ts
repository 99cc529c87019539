/** The VectorStore contract, against LanceDB (embedded, a fresh table per test). */
import { openLanceStore } from '../../src/stores/lancedb.js';
import { tempFolder } from '../helpers/temp.js';
import { describeStoreContract } from './contract.js';

const root = await tempFolder('embedpipe-lance-contract-');
let table = 0;

describeStoreContract('lancedb', () => openLanceStore(`lancedb://${root}/db?table=t${++table}`));
