import type {
	IAuthenticateGeneric,
	ICredentialTestRequest,
	ICredentialType,
	Icon,
	INodeProperties,
} from 'n8n-workflow';

export class ImageGenApi implements ICredentialType {
	name = 'imageGenApi';

	displayName = 'ImageGen API';

	icon: Icon = { light: 'file:../icons/imagegen.svg', dark: 'file:../icons/imagegen.dark.svg' };

	documentationUrl = 'https://github.com/imagegen/n8n-nodes-imagegen/blob/main/docs/nodes.md#credentials';

	properties: INodeProperties[] = [
		{
			displayName: 'API Key',
			name: 'apiKey',
			type: 'string',
			typeOptions: { password: true },
			required: true,
			default: '',
			description: 'Sent as "Authorization: Bearer &lt;key&gt;". A local imagegen-server prints its key when it starts.',
		},
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			required: true,
			default: 'http://localhost:8080/v1',
			placeholder: 'https://imagegen.example.com/v1',
			description: 'The API root, ending in /v1',
		},
		{
			displayName: 'Service Type',
			name: 'serviceType',
			type: 'options',
			options: [
				{ name: 'ImageGen', value: 'imagegen', description: 'An imagegen-server, or a service with its API' },
				{
					name: 'OpenAI-Compatible',
					value: 'openai',
					description: "A plain OpenAI-compatible images API (OpenAI, LocalAI, a gateway): only the fields it takes are sent; it has no uploads or jobs",
				},
			],
			// Credentials saved before this option have none: they keep talking to an ImageGen service.
			default: 'imagegen',
			description: 'What kind of API the Base URL points at',
		},
	];

	authenticate: IAuthenticateGeneric = {
		type: 'generic',
		properties: {
			headers: {
				Authorization: '=Bearer {{$credentials.apiKey}}',
			},
		},
	};

	test: ICredentialTestRequest = {
		request: {
			baseURL: '={{$credentials.baseUrl.replace(/\\/+$/, "")}}',
			url: '/models',
		},
		rules: [
			{
				// The only 403 GET /models gives: the service's admin key (--admin-key) was entered.
				type: 'responseCode',
				properties: {
					value: 403,
					message:
						"This is the service's admin key, which only manages keys and metrics. Enter an API key instead: one of --api-keys, or a key made with 'imagegen-server keys create' or POST /v1/admin/keys.",
				},
			},
			{
				type: 'responseCode',
				properties: { value: 401, message: 'The service refused this API key: it is wrong, revoked, expired or blocked. Check the API Key field.' },
			},
		],
	};
}
